/**
 * The SDK Runtime of a process that starts test environments (./testEnv.ts): the SDK's default logging (its
 * DefaultLogger at INFO, core's own lines from WARN) with core's lines forwarded to that logger rather than printed
 * by core, so that what is known to be noise in a test run can be left out:
 *
 * - core's warning that the server "did not advertise the activity_failure_include_heartbeat capability", which
 *   Temporal's time-skipping test server never does (it is not a Temporal server release; our activities do not rely
 *   on heartbeat details of failed attempts) — left out once this process has started a time-skipping server;
 * - the SDK's own INFO lines (worker state changes, "no Nexus services"), which count as DEBUG as in the CLI worker
 *   (src/worker/logging.ts).
 *
 * Everything else — warnings and errors, and the INFO lines of your workflows and activities — is printed as the SDK
 * prints it. A process that installed its own Runtime first keeps it. Not deterministic (process-wide state); never
 * import from workflow code.
 */
import {
  DefaultLogger,
  makeTelemetryFilterString,
  Runtime,
  type Logger,
  type LogLevel,
  type LogMetadata,
} from '@temporalio/worker';

/** The part of core's warning that names the capability the time-skipping server lacks. */
export const HEARTBEAT_CAPABILITY_WARNING =
  'did not advertise the activity_failure_include_heartbeat capability';

let timeSkippingStarted = false;

/**
 * Installs the test Runtime unless this process has one already; `timeSkipping` says a time-skipping server is
 * about to start. Call before the environment connects (the Runtime is made on first use).
 */
export function installTestRuntime(opts: { timeSkipping: boolean }): void {
  if (opts.timeSkipping) timeSkippingStarted = true;
  try {
    Runtime.install({
      logger: quiet(new DefaultLogger('INFO')),
      telemetryOptions: {
        logging: { filter: makeTelemetryFilterString({ core: 'WARN', other: 'ERROR' }), forward: {} },
      },
    });
  } catch {
    // A Runtime exists (the program's own, or ours from an earlier env): its logging stays.
  }
}

/** `logger` without the known noise (see the header). */
function quiet(logger: Logger): Logger {
  const log = (level: LogLevel, message: string, meta?: LogMetadata) => {
    const component = meta?.sdkComponent;
    if ((component === 'worker' || component === 'core') && level === 'INFO') return;
    if (timeSkippingStarted && component === 'core' && message.includes(HEARTBEAT_CAPABILITY_WARNING)) return;
    logger.log(level, message, meta);
  };
  return {
    log,
    trace: (m, meta) => log('TRACE', m, meta),
    debug: (m, meta) => log('DEBUG', m, meta),
    info: (m, meta) => log('INFO', m, meta),
    warn: (m, meta) => log('WARN', m, meta),
    error: (m, meta) => log('ERROR', m, meta),
  };
}

/**
 * Test environments on the real Temporal binaries, found by `binaries.ts` and passed to `@temporalio/testing` as
 * `server.executable = {type:'existing-path', path}`. Not deterministic; never import from workflow code. Importing
 * this module does no I/O.
 *
 * Downloads are off by default here: on a machine without internet the SDK's download fails slowly and obscurely,
 * while a missing binary should say "run `npm run setup`". Pass `allowDownload: true` to let the SDK fetch one.
 * Both install the test Runtime first (./testRuntime.ts: the SDK's logging without the time-skipping server's
 * known noise) unless the process has a Runtime already.
 */
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { SEARCH_ATTRIBUTE_KEYS } from '../contract/searchAttributes';
import { resolveTemporalCli, resolveTestServer } from './binaries';
import { DEV_SERVER_TUNING, devServerDbFilename, startingAgain } from './devServer';
import { installTestRuntime } from './testRuntime';

export interface TimeSkippingEnvOptions {
  /** Let the SDK download the test server when none is found. Default false. */
  allowDownload?: boolean;
}

/** The time-skipping test server. Throws when the binary is missing (message says how to get it). */
export function createTimeSkippingEnv(
  options: TimeSkippingEnvOptions = {},
): Promise<TestWorkflowEnvironment> {
  const executable = resolveTestServer({ allowDownload: options.allowDownload ?? false });
  installTestRuntime({ timeSkipping: true });
  return startingAgain(3, () => TestWorkflowEnvironment.createTimeSkipping({ server: { executable } }));
}

export interface DevServerEnvOptions {
  /** SQLite file to persist to (its folder is created); in memory when omitted. */
  dbFilename?: string;
  port?: number;
  namespace?: string;
  /** Let the SDK download the CLI when none is found. Default false. */
  allowDownload?: boolean;
}

/** The Temporal CLI dev server on 127.0.0.1, headless. Throws when the binary is missing. */
export function createDevServerEnv(options: DevServerEnvOptions = {}): Promise<TestWorkflowEnvironment> {
  const executable = resolveTemporalCli({ allowDownload: options.allowDownload ?? false });
  installTestRuntime({ timeSkipping: false });
  return startingAgain(3, () =>
    TestWorkflowEnvironment.createLocal({
      server: {
        executable,
        ip: '127.0.0.1',
        extraArgs: DEV_SERVER_TUNING.flatMap((value) => ['--dynamic-config-value', value]),
        searchAttributes: SEARCH_ATTRIBUTE_KEYS,
        port: options.port,
        namespace: options.namespace,
        dbFilename:
          options.dbFilename === undefined
            ? undefined
            : devServerDbFilename({ dbFilename: options.dbFilename }),
      },
    }),
  );
}

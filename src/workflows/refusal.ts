/**
 * A session refused at its start ends itself (docs/protocol.md "Starting a session"): when a worker refuses the
 * session's tool or hook names in its first run — no worker has accepted them yet — the session disposes itself as
 * soon as no turn is open (rule 31: its log ends `session/disposed`, its workflow completes) instead of staying
 * behind idle. The refusal itself is where it always was: the rejected `deliver` update, or the first turn's
 * `turn/end` error. A later run keeps the older rule (the turn ends in error, the session lives on): a worker
 * accepted its names before, so a refusal then is a worker deployed without them, not a session that never worked.
 * Deterministic (workflow sandbox).
 */
import { condition, log, patched } from '@temporalio/workflow';
import type { SessionDriver } from '../domain/driver';
import type { ErrorInfo } from '../domain/events';
import { SessionNames, type Resolution } from './names';

/** Marks runs in which a session refused at its start disposes itself (older runs stayed idle). */
const REFUSED_SESSION_ENDS = 'refused-session-ends';

/** The session's names (./names.ts), noting the first time a worker refuses them in this run. */
export class WatchedNames extends SessionNames {
  /** The first refusal of this run: an unknown tool or hook, as the worker described it. */
  refusal: ErrorInfo | undefined;

  override tools(): ReturnType<SessionNames['tools']> {
    return this.watched(super.tools());
  }

  override hooks(): ReturnType<SessionNames['hooks']> {
    return this.watched(super.hooks());
  }

  /** The same promise (its callers' order is unchanged), with the refusal noted when it settles refused. */
  private watched<P extends Promise<Resolution<unknown>>>(resolution: P): P {
    void resolution.then(
      (r) => {
        if (r.kind === 'failed' && 'refused' in r && r.refused) this.refusal ??= r.error;
      },
      () => undefined, // a resolution never rejects (failures are data); its callers see it as it is
    );
    return resolution;
  }
}

/**
 * Disposes the session once a refusal was noted and no turn is open (a refused first turn ends in error first).
 * Call it in a session's first run only.
 */
export function endWhenRefused(driver: SessionDriver, names: WatchedNames): void {
  void condition(() => names.refusal !== undefined && !driver.core.turnOpen && !driver.disposing).then(() => {
    if (!patched(REFUSED_SESSION_ENDS)) return;
    log.warn('a worker refused the names of a new session; the session ends', { error: names.refusal });
    driver.signal('dispose', {});
  });
}

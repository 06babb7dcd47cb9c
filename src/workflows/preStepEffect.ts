/**
 * The `pre-step` effect: the built-in first stage (cross-session references' snapshots enter before their messages,
 * ./sessionRefs.ts), then the waterfall (src/domain/waterfall.ts) of the user's listeners, outermost first, and one
 * listener per pre-step hook (./hooks.ts). A failure is answered as data. Deterministic (workflow sandbox).
 */
import { ErrorCodes } from '../contract';
import type { Answer, PreStepRequest } from '../domain/effects';
import { runPreStep, type PreStepListener } from '../domain/waterfall';
import type { SessionConfig } from '../domain/wire';
import { failed } from './errors';
import { preStepHookListener } from './hooks';
import { stageSessionRefs } from './sessionRefs';

export async function preStep(
  sessionId: string,
  config: SessionConfig,
  userListeners: readonly PreStepListener[],
  request: PreStepRequest,
): Promise<Answer> {
  const listeners = [...userListeners, ...request.hooks.map(preStepHookListener)];
  try {
    const staged = await stageSessionRefs(sessionId, config.labels ?? [], request.batch);
    if (staged.kind === 'reject') return { kind: 'decided', decision: staged };
    const decision = await runPreStep(listeners, {
      sessionId,
      turn: request.turn,
      step: request.step,
      batch: staged.batch,
      config,
    });
    return { kind: 'decided', decision };
  } catch (err) {
    return failed(err, ErrorCodes.PreStepFailed);
  }
}

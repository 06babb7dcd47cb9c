/**
 * Moving to a new version of the workflow code at quiet points (docs/upgrades.md), on the in-memory interpreter: an
 * idle session moves when its next waking message arrives, before that message's turn (the message is carried), or
 * when the `upgrade` signal wakes it; `upgrade` with no new version changes nothing; a bad `upgrade` payload is
 * refused and counted (rule 5). The worker's versioning option and its environment variables refuse bad values,
 * naming the field. The two real builds on a dev server: test/integration/upgrades.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/worker/config';
import { bundleBuildId, resolveVersion } from '../../src/worker/versioning';
import { InMemorySession, user } from '../support/interpreter';

const types = (s: InMemorySession) => s.log.map((e) => e.type);

describe('moving at quiet points', () => {
  it('an idle session moves when its next message arrives, and that turn runs in the new run', () => {
    const s = new InMemorySession();
    s.followup(user('p1'));
    expect(s.continuedAsNew).toBe(0);
    s.newVersionAvailable();
    s.followup(user('p2'));
    expect(s.continuedAsNew).toBe(1);
    // The earlier run ends with p2's insertion; the new run opens turn 2 and claims it.
    expect(s.earlierLog.at(-1)?.type).toBe('agent/inbox/spliced');
    expect(s.core.log.find((e) => e.type === 'turn/start')?.data).toMatchObject({ turn: 2 });
    expect(s.log.filter((e) => e.type === 'user/message').map((e) => e.data.message.id)).toEqual([
      'p1',
      'p2',
    ]);
    expect(types(s).filter((t) => t === 'turn/end')).toHaveLength(2);
  });

  it('the upgrade signal moves an idle session at once, and does nothing without a new version', () => {
    const s = new InMemorySession();
    s.followup(user('p1'));
    const logged = s.log.length;
    s.signal({ signal: 'upgrade', payload: {} });
    expect(s.continuedAsNew).toBe(0);
    expect(s.log.length).toBe(logged);
    expect(s.core.stateView().refused).toBe(0);
    s.newVersionAvailable();
    s.signal({ signal: 'upgrade', payload: { reason: 'v2 is out' } });
    expect(s.continuedAsNew).toBe(1);
    expect(s.log.length).toBe(logged);
    s.followup(user('p2'));
    expect(s.continuedAsNew).toBe(1);
    expect(s.log.filter((e) => e.type === 'user/message').map((e) => e.data.message.id)).toEqual([
      'p1',
      'p2',
    ]);
  });

  it('refuses a bad upgrade payload and counts it', () => {
    const s = new InMemorySession();
    s.newVersionAvailable();
    s.signal({ signal: 'upgrade', payload: { now: true } });
    expect(s.continuedAsNew).toBe(0);
    expect(s.core.stateView().refused).toBe(1);
  });
});

describe('the worker version', () => {
  const bundle = { code: 'workflow code' };

  it('defaults to the task queue as deployment and a hash of the bundle as build id', () => {
    expect(resolveVersion(undefined, 'my.queue', bundle)).toEqual({
      deploymentName: 'my-queue',
      buildId: bundleBuildId(bundle),
    });
    expect(bundleBuildId(bundle)).toMatch(/^wf-[0-9a-f]{16}$/);
    expect(bundleBuildId({ code: 'other code' })).not.toBe(bundleBuildId(bundle));
    expect(resolveVersion(false, 'q', bundle)).toBeUndefined();
    expect(resolveVersion({ deploymentName: 'd', buildId: 'b1' }, 'q', bundle)).toEqual({
      deploymentName: 'd',
      buildId: 'b1',
    });
  });

  it('refuses bad options and variables, naming the field', () => {
    expect(() => resolveVersion({ deploymentName: 'a.b' }, 'q', bundle)).toThrow(
      /invalid worker option versioning\.deploymentName: must not contain "\."/,
    );
    expect(() => resolveVersion({ buildId: '' }, 'q', bundle)).toThrow(
      /versioning\.buildId: must not be empty/,
    );
    expect(() => loadConfig({ AGENT_SESSIONS_VERSIONING: 'maybe' })).toThrow(
      /invalid configuration: AGENT_SESSIONS_VERSIONING: expected on or off/,
    );
    expect(() => loadConfig({ AGENT_SESSIONS_DEPLOYMENT: 'a.b' })).toThrow(
      /invalid configuration: AGENT_SESSIONS_DEPLOYMENT: must not contain/,
    );
    expect(loadConfig({ AGENT_SESSIONS_VERSIONING: 'OFF' }).versioning).toBe('off');
  });
});

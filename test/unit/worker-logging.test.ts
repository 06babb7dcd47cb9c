/**
 * The worker logger without a worker: level filtering (the SDK's own INFO lines count as DEBUG, so a start is
 * quiet), the start line that is written at every level, the JSON fields (session id, run id, turn, step first)
 * and the pretty form, the activity interceptor that adds turn and step, and LOG_LEVEL / LOG_FORMAT validation.
 */
import { describe, expect, it } from 'vitest';
import { activityLogAttributes, createWorkerLogger } from '../../src/worker/logging';
import { loadConfig } from '../../src/worker/config';

function capture(level?: 'trace' | 'debug' | 'info' | 'warn' | 'error', format?: 'json' | 'pretty') {
  const lines: string[] = [];
  const logger = createWorkerLogger({
    ...(level ? { level } : {}),
    ...(format ? { format } : {}),
    write: (line) => lines.push(line),
  });
  return { logger, lines, json: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

const workflowMeta = {
  sdkComponent: 'workflow',
  workflowId: 'session-1',
  runId: 'run-1',
  namespace: 'default',
  taskQueue: 'q',
  workflowType: 'agentSession',
  turn: 3,
  step: 2,
};

describe('createWorkerLogger', () => {
  it('writes one JSON object per line with sessionId, runId, turn and step', () => {
    const { logger, lines, json } = capture();
    logger.warn('refused a signal payload', { ...workflowMeta, lane: 'followup' });
    expect(lines).toHaveLength(1);
    expect(lines[0]!.endsWith('\n')).toBe(true);
    const [entry] = json();
    expect(entry).toMatchObject({
      level: 'warn',
      msg: 'refused a signal payload',
      sessionId: 'session-1',
      runId: 'run-1',
      turn: 3,
      step: 2,
      lane: 'followup',
      sdkComponent: 'workflow',
    });
    expect(Object.keys(entry!).slice(0, 7)).toEqual([
      'time',
      'level',
      'msg',
      'sessionId',
      'runId',
      'turn',
      'step',
    ]);
    expect(entry).not.toHaveProperty('workflowId');
    expect(Date.parse(entry!.time as string)).not.toBeNaN();
  });

  it('maps an activity line: workflowRunId → runId, drops the task token, writes errors as name and message', () => {
    const { logger, json } = capture();
    const error = Object.assign(new Error('boom'), { type: 'ModelUnavailable' });
    logger.warn('Activity failed', {
      sdkComponent: 'worker',
      workflowId: 's',
      workflowRunId: 'r',
      activityType: 'modelStep',
      taskToken: 'AAAA',
      error,
      big: 12n,
    });
    expect(json()[0]).toEqual({
      time: expect.any(String),
      level: 'warn',
      msg: 'Activity failed',
      sessionId: 's',
      runId: 'r',
      sdkComponent: 'worker',
      activityType: 'modelStep',
      error: { name: 'Error', message: 'boom', type: 'ModelUnavailable' },
      big: '12',
    });
  });

  it('counts the SDK’s own INFO lines as DEBUG, keeps workflow and activity INFO lines at INFO', () => {
    const info = capture('info');
    info.logger.info('Worker state changed', { sdkComponent: 'worker', state: 'RUNNING' });
    info.logger.info('core says hi', { sdkComponent: 'core' });
    info.logger.debug('Workflow started', { ...workflowMeta, sdkComponent: 'worker' });
    info.logger.info('from the workflow', workflowMeta);
    info.logger.info('from an activity', { sdkComponent: 'activity', workflowId: 's' });
    expect(info.json().map((e) => e.msg)).toEqual(['from the workflow', 'from an activity']);
    const debug = capture('debug');
    debug.logger.info('Worker state changed', { sdkComponent: 'worker' });
    debug.logger.trace('very chatty', { sdkComponent: 'worker' });
    expect(debug.json().map((e) => [e.msg, e.level])).toEqual([['Worker state changed', 'info']]);
  });

  it('filters by level, and writes a notice (the start line) at every level', () => {
    const { logger, json } = capture('warn');
    logger.info('hidden', workflowMeta);
    logger.warn('shown', workflowMeta);
    logger.error('shown too', workflowMeta);
    logger.notice('agent-sessions worker: 127.0.0.1:7233 namespace=default', { taskQueue: 'q' });
    expect(json().map((e) => e.msg)).toEqual([
      'shown',
      'shown too',
      'agent-sessions worker: 127.0.0.1:7233 namespace=default',
    ]);
    const quietest = capture('error');
    quietest.logger.notice('start', {});
    expect(quietest.json().map((e) => [e.msg, e.level])).toEqual([['start', 'info']]);
  });

  it('writes a pretty line: time, level, message, session, short run, turn, step, then the rest', () => {
    const { logger, lines } = capture('info', 'pretty');
    logger.warn('refused a signal payload', {
      ...workflowMeta,
      runId: '01a23c25-602d-781f-8eb4-db1984aeb621',
      lane: 'steer',
    });
    expect(lines[0]).toMatch(
      /^\d\d:\d\d:\d\d\.\d{3} WARN {2}refused a signal payload session=session-1 run=01a23c25 turn=3 step=2 namespace=default taskQueue=q workflowType=agentSession lane=steer\n$/,
    );
  });
});

describe('activityLogAttributes', () => {
  it('adds turn, step, callId and hook from the activity input to its log attributes', async () => {
    const interceptors = activityLogAttributes({} as never);
    const base = { workflowId: 's', workflowRunId: 'r' };
    const next = (a: Record<string, unknown>) => a;
    expect(interceptors.outbound!.getLogAttributes!(base, next)).toEqual(base);
    await interceptors.inbound!.execute!(
      { args: [{ sessionId: 's', turn: 2, step: 3, callId: 'call_1_0', name: 'echo' }], headers: {} },
      async () => 'done',
    );
    expect(interceptors.outbound!.getLogAttributes!(base, next)).toEqual({
      ...base,
      turn: 2,
      step: 3,
      callId: 'call_1_0',
    });

    const hook = activityLogAttributes({} as never);
    await hook.inbound!.execute!(
      { args: [{ hook: 'policy', turn: 1, step: 1, call: { callId: 'call_0_0' } }], headers: {} },
      async () => 'done',
    );
    expect(hook.outbound!.getLogAttributes!({}, next)).toEqual({
      turn: 1,
      step: 1,
      hook: 'policy',
      callId: 'call_0_0',
    });

    const setup = activityLogAttributes({} as never);
    await setup.inbound!.execute!({ args: [{ names: ['echo'] }], headers: {} }, async () => 'done');
    expect(setup.outbound!.getLogAttributes!(base, next)).toEqual(base);
  });
});

describe('LOG_LEVEL and LOG_FORMAT', () => {
  it('default to info and no fixed format; accept any case', () => {
    expect(loadConfig({}).logLevel).toBe('info');
    expect(loadConfig({}).logFormat).toBeUndefined();
    expect(loadConfig({ LOG_LEVEL: 'DEBUG', LOG_FORMAT: 'Pretty' })).toMatchObject({
      logLevel: 'debug',
      logFormat: 'pretty',
    });
  });

  it('refuse other values, naming the variable and what it takes', () => {
    expect(() => loadConfig({ LOG_LEVEL: 'loud' })).toThrow(
      'invalid configuration: LOG_LEVEL: expected one of trace, debug, info, warn, error',
    );
    expect(() => loadConfig({ LOG_FORMAT: 'xml' })).toThrow(
      'invalid configuration: LOG_FORMAT: expected json or pretty',
    );
  });
});

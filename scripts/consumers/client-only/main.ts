// A service that only talks to sessions (ESM, TypeScript nodenext): @agent-sessions/client alone. The worker of
// ../worker serves the sessions; this asks one and checks the answer came from that worker's tool.
import assert from 'node:assert/strict';
import { Connection } from '@temporalio/client';
import { InvalidInputError, SessionClient, SessionNotFoundError } from '@agent-sessions/client';

const connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS ?? 'localhost:7233' });
const sessions = new SessionClient({ connection, taskQueue: process.env.TASK_QUEUE ?? 'agent-sessions' });

await assert.rejects(sessions.followup('consumer-session', ''), InvalidInputError);
await assert.rejects(sessions.state('consumer-no-such-session'), SessionNotFoundError);

const id = `consumer-${process.pid}`;
await sessions.start(id, {
  tools: ['order_status'],
  model: { provider: 'openai-compatible', model: 'rules' },
});
const { outcome } = await sessions.ask(id, 'Where is order 12345?');
assert.equal(outcome.status, 'ended');
assert.deepEqual(outcome.status === 'ended' && outcome.reason, { kind: 'completed' });
assert.equal(outcome.status === 'ended' && outcome.answer, 'Order 12345 shipped on Monday.');
await sessions.dispose(id);
await connection.close();
console.log('client-only (ESM, nodenext): ok');

/**
 * The `subsessions` toolset: `delegate`, a tool the workflow performs by starting a sub-session (a child workflow of
 * the same type, docs/protocol.md "Sub-sessions"); its body never runs on the worker. Not deterministic.
 */
import { DelegateArgsSchema } from '../domain/subsession';
import { defineTool, type ToolDefinition } from './tools';

export const delegateTool = defineTool({
  name: 'delegate',
  description:
    'Hands a task to a sub-session: a new session with (at most) this session’s tools runs one turn on it and its final answer is returned.',
  input: DelegateArgsSchema,
  kind: 'delegate',
  execute() {
    throw new Error('delegate is performed by the workflow (a sub-session), never as an activity');
  },
});

export const subsessionTools: ToolDefinition[] = [delegateTool];

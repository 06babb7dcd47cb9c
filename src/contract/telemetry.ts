/**
 * Names the project's traces use (docs/operations.md, "Tracing and metrics"): the attributes our spans carry besides
 * the OpenTelemetry GenAI semantic conventions'. Sandbox-safe constants shared by workflow and worker code.
 */
export const SpanAttributes = {
  session: 'agent_session.id',
  turn: 'agent_session.turn',
  step: 'agent_session.step',
  endReason: 'agent_session.turn.end_reason',
} as const;

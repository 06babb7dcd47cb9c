/**
 * Traces and metrics from inside the workflow (issue: operability, parts 4 and 5). Deterministic (workflow sandbox).
 *
 * Tracing: one trace per delivery. A worker with tracing on loads Temporal's OpenTelemetry workflow interceptors,
 * which register a tracer provider in the sandbox and make the span of each handled signal or update the active
 * context while its handler runs. The session remembers that context for the message it delivered; the turn that
 * message opens gets a `turn <n>` span under it, and every activity of the turn (model, tools, hooks) is scheduled
 * inside it. With tracing off nothing is registered: the OpenTelemetry API is a no-op and this costs nothing.
 * Spans leave the sandbox through the interceptors' sink, which Temporal does not call during replay.
 *
 * Metrics: the SDK's workflow metric meter, which drops what a replay emits; the worker's runtime exports them
 * (Prometheus at METRICS_ADDRESS) or discards them.
 */
import * as otel from '@opentelemetry/api';
import { metricMeter } from '@temporalio/workflow';
import { SpanAttributes as Attributes } from '../contract/telemetry';
import type { SessionEvent } from '../domain/events';

const tracer = otel.trace.getTracer('agent-sessions');
/** Deliveries remembered for the turn they may open (the oldest are forgotten first). */
const DELIVERY_WINDOW = 256;

export class TurnTracing {
  private open: { turn: number; span: otel.Span; ctx: otel.Context } | undefined;
  private readonly deliveries = new Map<string, otel.Context>();

  constructor(private readonly sessionId: string) {}

  /** Remembers the active span (a handled signal's or update's) as the parent of the turn `messageId` opens. */
  noteDelivery(messageId: unknown): void {
    if (typeof messageId !== 'string') return;
    const active = otel.context.active();
    if (!otel.trace.getSpan(active)) return;
    this.deliveries.set(messageId, active);
    if (this.deliveries.size > DELIVERY_WINDOW) this.deliveries.delete(this.deliveries.keys().next().value!);
  }

  /**
   * Runs `fn` inside the span of `turn`, opening it first when the turn is new: a child of the delivery of
   * `openedBy` when its context is known, else the root of a trace of its own.
   */
  inTurn<T>(turn: number, openedBy: () => string | undefined, fn: () => T): T {
    if (this.open?.turn !== turn) {
      this.end();
      const opener = openedBy();
      const parent = (opener !== undefined ? this.deliveries.get(opener) : undefined) ?? otel.ROOT_CONTEXT;
      const span = tracer.startSpan(
        `turn ${turn}`,
        { attributes: { [Attributes.session]: this.sessionId, [Attributes.turn]: turn } },
        parent,
      );
      this.open = { turn, span, ctx: otel.trace.setSpan(parent, span) };
    }
    return otel.context.with(this.open.ctx, fn);
  }

  /** Ends the open turn's span with how the turn ended. */
  end(reason?: string): void {
    if (!this.open) return;
    if (reason) this.open.span.setAttribute(Attributes.endReason, reason);
    this.open.span.end();
    this.open = undefined;
  }
}

const turns = metricMeter.createCounter('agent_sessions_turns', 'turns', 'Turns ended, by end reason');
const steps = metricMeter.createCounter('agent_sessions_steps', 'steps', 'Steps started');
const refused = metricMeter.createCounter(
  'agent_sessions_refused_payloads',
  'payloads',
  'Signals refused as bad input, by signal',
);
const continuedAsNew = metricMeter.createCounter(
  'agent_sessions_continue_as_new',
  'runs',
  'Sessions that continued as new',
);
const inboxDepth = metricMeter.createGauge(
  'agent_sessions_inbox_depth',
  'int',
  'messages',
  'Pending messages at the last boundary, by list (next_turn, next_step)',
);

/** The session's own metrics, counted from its events and refusals. */
export const sessionMetrics = {
  onEvent(event: SessionEvent, pending: () => { nextTurn: number; nextStep: number }): void {
    if (event.type === 'turn/end') turns.add(1, { reason: event.data.reason.kind });
    else if (event.type === 'step/start') steps.add(1);
    if (event.type === 'turn/start' || event.type === 'turn/end' || event.type === 'agent/inbox/spliced') {
      const p = pending();
      inboxDepth.set(p.nextTurn, { list: 'next_turn' });
      inboxDepth.set(p.nextStep, { list: 'next_step' });
    }
  },
  refused(signal: string): void {
    refused.add(1, { signal });
  },
  continuedAsNew(): void {
    continuedAsNew.add(1);
  },
};

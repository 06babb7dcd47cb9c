/**
 * Tracing and metrics of the worker and client processes (issue: operability, parts 4 and 5), off by default.
 *
 * Tracing is Temporal's OpenTelemetry interceptors (client → workflow → activities; workflow spans leave the sandbox
 * through a sink Temporal does not call during replay), exported over OTLP/HTTP as the standard `OTEL_*` variables
 * say, plus our spans: `turn <n>` in the workflow (src/workflows/telemetry.ts) and, in the activities, a GenAI span
 * per model call (`chat <model>`, with the semantic conventions' model, token and finish-reason attributes) and per
 * tool call (`execute_tool <name>`). Metrics are the SDK runtime's, exported on a Prometheus endpoint at
 * METRICS_ADDRESS, plus ours: the workflow's turn, step, inbox, refusal and continue-as-new metrics and, here, model
 * latency and tokens and tool latency by tool. Not deterministic: never imported by workflow code.
 */
import * as otel from '@opentelemetry/api';
import type { Context as ActivityContext } from '@temporalio/activity';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry';
import type {
  ActivityExecuteInput,
  ActivityInboundCallsInterceptor,
  ActivityInterceptorsFactory,
  InjectedSinks,
  Next,
  WorkerOptions,
} from '@temporalio/worker';
import type { ModelStepInput, ToolExecInput } from '../activities/types';
import type { ModelStepResult, ToolExecResult } from '../domain/effects';
import { modelLabel } from '../domain/wire';
import type { Tracing } from '../telemetry';
import { SpanAttributes as Attributes } from '../contract/telemetry';

/** The OpenTelemetry workflow interceptors a bundle must include for workflow spans (src/worker/bundle.ts). */
export const OTEL_WORKFLOW_INTERCEPTORS =
  require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors');

/**
 * The worker options that trace workflows and activities: the workflow interceptors module (a prebuilt bundle must
 * include it), the sink its spans leave by, and the activity interceptors; our GenAI/metrics interceptor in every
 * case.
 */
export function workerTelemetryOptions(
  tracing: Tracing | undefined,
): Pick<WorkerOptions, 'interceptors' | 'sinks'> {
  const ours: ActivityInterceptorsFactory = (ctx) => ({
    inbound: new GenAiActivityInterceptor(ctx, tracing?.tracer),
  });
  if (!tracing) return { interceptors: { activity: [ours] } };
  const options = { tracer: tracing.tracer };
  const sinks: InjectedSinks<Record<string, never>> = {
    exporter: makeWorkflowExporter(tracing.spanProcessor, tracing.resource),
  } as never;
  return {
    interceptors: {
      workflowModules: [OTEL_WORKFLOW_INTERCEPTORS],
      activity: [
        (ctx) => ({
          inbound: new OpenTelemetryActivityInboundInterceptor(ctx, options),
          outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
        }),
        ours,
      ],
    },
    sinks,
  };
}

/**
 * Around model and tool activities: a GenAI span (when tracing) and the latency and token metrics (always; the
 * runtime drops them when no metrics exporter is configured).
 */
class GenAiActivityInterceptor implements ActivityInboundCallsInterceptor {
  constructor(
    private readonly ctx: ActivityContext,
    private readonly tracer: otel.Tracer | undefined,
  ) {}

  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>) {
    const type = this.ctx.info.activityType;
    if (type === 'modelStep') return this.model(input.args[0] as ModelStepInput, () => next(input));
    if (type === 'executeTool') return this.tool(input.args[0] as ToolExecInput, () => next(input));
    return next(input);
  }

  private async model(call: ModelStepInput, run: () => Promise<unknown>): Promise<unknown> {
    const model = modelLabel(call.model);
    const provider = call.model?.provider ?? 'default';
    const requested = call.model && 'model' in call.model ? call.model.model : undefined;
    const meter = this.ctx.metricMeter.withTags({ model });
    return this.timed(
      `chat ${requested ?? model}`,
      {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': provider,
        'gen_ai.system': provider,
        ...(requested ? { 'gen_ai.request.model': requested } : {}),
        [Attributes.session]: call.sessionId,
        [Attributes.turn]: call.turn,
        [Attributes.step]: call.step,
      },
      run,
      (ms, result, span) => {
        meter.createHistogram('agent_sessions_model_latency', 'int', 'ms', 'Model call latency').record(ms);
        const r = result as ModelStepResult | undefined;
        if (!r) return;
        span?.setAttribute('gen_ai.response.finish_reasons', [r.finish]);
        const tokens = meter.createCounter(
          'agent_sessions_model_tokens',
          'tokens',
          'Tokens the providers reported',
        );
        if (r.usage?.inputTokens !== undefined) {
          span?.setAttribute('gen_ai.usage.input_tokens', r.usage.inputTokens);
          tokens.add(r.usage.inputTokens, { direction: 'input' });
        }
        if (r.usage?.outputTokens !== undefined) {
          span?.setAttribute('gen_ai.usage.output_tokens', r.usage.outputTokens);
          tokens.add(r.usage.outputTokens, { direction: 'output' });
        }
      },
    );
  }

  private async tool(call: ToolExecInput, run: () => Promise<unknown>): Promise<unknown> {
    return this.timed(
      `execute_tool ${call.name}`,
      {
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': call.name,
        'gen_ai.tool.call.id': call.callId,
        [Attributes.session]: call.sessionId,
        [Attributes.turn]: call.turn,
        [Attributes.step]: call.step,
      },
      run,
      (ms, result, span) => {
        this.ctx.metricMeter
          .createHistogram('agent_sessions_tool_latency', 'int', 'ms', 'Tool call latency, by tool')
          .record(ms, { tool: call.name });
        const error = (result as ToolExecResult | undefined)?.error;
        if (error) span?.setAttribute('error.type', error.code);
      },
    );
  }

  /** Runs the call in a span (when tracing), then reports its latency and result (undefined when it threw). */
  private async timed(
    name: string,
    attributes: otel.Attributes,
    run: () => Promise<unknown>,
    done: (ms: number, result: unknown, span: otel.Span | undefined) => void,
  ): Promise<unknown> {
    const started = performance.now();
    const body = async (span: otel.Span | undefined) => {
      try {
        const result = await run();
        done(Math.round(performance.now() - started), result, span);
        return result;
      } catch (err) {
        done(Math.round(performance.now() - started), undefined, span);
        if (span) {
          span.recordException(err as Error);
          span.setStatus({ code: otel.SpanStatusCode.ERROR, message: (err as Error).message });
        }
        throw err;
      } finally {
        span?.end();
      }
    };
    if (!this.tracer) return body(undefined);
    return this.tracer.startActiveSpan(name, { kind: otel.SpanKind.CLIENT, attributes }, (span) =>
      body(span),
    );
  }
}

/**
 * The runtime's telemetry options for METRICS_ADDRESS (host:port of a Prometheus endpoint the worker serves), or
 * undefined when it is not set. Throws naming the variable when it is not host:port.
 */
export function metricsFromEnv(env: NodeJS.ProcessEnv = process.env) {
  const address = env.METRICS_ADDRESS?.trim();
  if (!address) return undefined;
  if (!/^[^\s:]+:\d{1,5}$/.test(address))
    throw new Error(`METRICS_ADDRESS: expected host:port (e.g. 127.0.0.1:9464), got "${address}"`);
  return { metrics: { prometheus: { bindAddress: address } } };
}

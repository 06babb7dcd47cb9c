/**
 * A process's OpenTelemetry tracing (docs/observability.md), shared by workers, clients and the CLI: off unless the
 * standard OTEL_* variables name an OTLP endpoint. Light: loads the OpenTelemetry SDK and Temporal's client
 * interceptor, not the Temporal worker (the worker's part is src/worker/telemetry.ts). Not deterministic.
 */
import * as otel from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry/lib/client';

/** A process's tracing: the provider (also the global one) and the processor that exports its spans. */
export interface Tracing {
  tracer: otel.Tracer;
  resource: Resource;
  spanProcessor: SpanProcessor;
  /** Exports what is buffered and stops. */
  shutdown(): Promise<void>;
}

/**
 * Whether the environment turns tracing on: an OTLP endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT` or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) or `OTEL_TRACES_EXPORTER=otlp`; `OTEL_SDK_DISABLED=true` or
 * `OTEL_TRACES_EXPORTER=none` turn it off. Throws naming the variable when OTEL_TRACES_EXPORTER names another
 * exporter.
 */
export function tracingEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporter = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase();
  if (exporter === 'none') return false;
  if (exporter && exporter !== 'otlp')
    throw new Error(`OTEL_TRACES_EXPORTER: "${exporter}" is not supported (otlp or none)`);
  return Boolean(
    exporter === 'otlp' ||
    env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() ||
    env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim(),
  );
}

/**
 * Starts tracing for this process when the environment turns it on (see tracingEnabled): an OTLP/HTTP exporter
 * that reads its endpoint, headers and timeout from the standard variables, a batch processor, and a tracer
 * provider registered as the global one with an async-hooks context manager. `service` is the default
 * `service.name` (OTEL_SERVICE_NAME wins).
 */
export function startTracing(service: string, env: NodeJS.ProcessEnv = process.env): Tracing | undefined {
  if (!tracingEnabled(env)) return undefined;
  const resource = new Resource({ 'service.name': env.OTEL_SERVICE_NAME?.trim() || service });
  // The exporter reads the other OTEL_EXPORTER_OTLP_* variables (headers, timeout) from the process itself.
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim().replace(/\/+$/, '');
  const url = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || (base ? `${base}/v1/traces` : undefined);
  const spanProcessor = new BatchSpanProcessor(new OTLPTraceExporter(url ? { url } : {}));
  const provider = new BasicTracerProvider({ resource });
  provider.addSpanProcessor(spanProcessor);
  provider.register({ contextManager: new AsyncLocalStorageContextManager().enable() });
  return {
    tracer: provider.getTracer('agent-sessions'),
    resource,
    spanProcessor,
    shutdown: () => provider.shutdown(),
  };
}

/** Client interceptors that start a span per client call and carry its context in the headers. */
export function clientTracingInterceptors(tracing: Tracing | undefined) {
  return tracing
    ? { workflow: [new OpenTelemetryWorkflowClientInterceptor({ tracer: tracing.tracer })] }
    : {};
}

import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, TracerProvider, type SpanProcessor } from '@opentelemetry/sdk-trace';
import type { LoadedConfig } from '../../config/load.js';
import { RequestTracing } from './request_tracing.js';
import { samplerFromEnv } from './sampler_from_env.js';

/**
 * Tracing when the config turns it on (`tracing.enabled`) or the environment asks for OTLP
 * traces (`OTEL_TRACES_EXPORTER=otlp`), unless `OTEL_SDK_DISABLED=true` or
 * `OTEL_TRACES_EXPORTER=none`; `undefined` otherwise, and then nothing of it runs per request.
 * Spans go to the OTLP/HTTP exporter, which reads `OTEL_EXPORTER_OTLP_*` itself, through a
 * batching processor; `spanProcessor` replaces both (tests, embedding code with its own pipeline).
 */
export function openTracing(
  config: Pick<LoadedConfig, 'tracing'>,
  env: NodeJS.ProcessEnv,
  spanProcessor?: SpanProcessor,
): RequestTracing | undefined {
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '').split(',').map((e) => e.trim());
  const wanted = config.tracing.enabled || exporters.includes('otlp');
  if (!wanted || env.OTEL_SDK_DISABLED === 'true' || exporters.includes('none')) return undefined;
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override the default name.
  const resource = resourceFromAttributes({ 'service.name': 'tessera' }).merge(detectResources({ detectors: [envDetector] }));
  const provider = new TracerProvider({
    resource,
    sampler: samplerFromEnv(env),
    spanProcessors: [spanProcessor ?? new BatchSpanProcessor({ exporter: new OTLPTraceExporter() })],
  });
  return new RequestTracing(provider.getTracer('tessera'), () => provider.shutdown());
}

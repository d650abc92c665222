import { AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, TraceIdRatioBasedSampler, type Sampler } from '@opentelemetry/sdk-trace';

/**
 * The sampler the OpenTelemetry specification's `OTEL_TRACES_SAMPLER` and
 * `OTEL_TRACES_SAMPLER_ARG` name (its "General SDK Configuration"), which this SDK version no
 * longer reads itself. Unknown values fall back to the specification's default,
 * `parentbased_always_on`.
 */
export function samplerFromEnv(env: NodeJS.ProcessEnv): Sampler {
  const ratio = Number(env.OTEL_TRACES_SAMPLER_ARG ?? '1');
  const traceIdRatio = () => new TraceIdRatioBasedSampler(Number.isFinite(ratio) && ratio >= 0 && ratio <= 1 ? ratio : 1);
  switch (env.OTEL_TRACES_SAMPLER) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return traceIdRatio();
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: traceIdRatio() });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

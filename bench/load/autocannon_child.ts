/**
 * Runs autocannon in its own process (so its CPU time is measured apart from the runner's) and
 * checks every response. Input: LoadOptions as JSON in argv[2]; output: IPC messages
 * `{ type: 'started' }` then `{ type: 'result', result: LoadResult }`.
 */
import autocannon from 'autocannon';
import type { LoadOptions, LoadResult } from './load_generator.js';

const options = JSON.parse(process.argv[2] ?? '{}') as LoadOptions;
const { request, expect } = options;
let non2xx = 0;
let unexpected = 0;
let badSample: string | null = null;

process.send?.({ type: 'started' });
const result = await autocannon({
  url: options.baseUrl,
  connections: options.connections,
  duration: options.durationS,
  timeout: 2,
  requests: [
    {
      method: request.method,
      path: request.path,
      headers: { ...request.headers },
      ...(request.body === undefined ? {} : { body: request.body }),
      onResponse(status, body) {
        if (status < 200 || status > 299) non2xx++;
        else if (status === expect.status && body.startsWith(expect.bodyPrefix)) return;
        else unexpected++;
        badSample ??= `${status} ${body.slice(0, 160).replace(/[\r\n]/g, ' ')}`;
      },
    },
  ],
});
const loadResult: LoadResult = {
  requests: result.requests.total,
  durationS: result.duration,
  rps: result.duration > 0 ? result.requests.total / result.duration : 0,
  latencyMs: {
    p50: result.latency.p50,
    p90: result.latency.p90,
    p99: result.latency.p99,
    max: result.latency.max,
    mean: result.latency.mean,
  },
  non2xx: Math.max(non2xx, result.non2xx),
  unexpected,
  // autocannon counts connection failures and timeouts together in `errors`.
  errors: { connect: Math.max(0, result.errors - result.timeouts), read: 0, write: 0, timeout: result.timeouts },
  badSample,
};
process.send?.({ type: 'result', result: loadResult }, () => process.exit(0));

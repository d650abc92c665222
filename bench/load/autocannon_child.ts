/**
 * Runs autocannon in its own process (so its CPU time is measured apart from the runner's) and
 * checks every response. Input: LoadOptions as JSON in argv[2]; output: IPC messages
 * `{ type: 'started' }` then `{ type: 'result', result: LoadResult }`.
 *
 * The same rules as bench/load/check.lua: a kind is chosen per request by weight, a feed gives
 * the body, a `once` feed that runs out stops the run, and every response must meet the
 * expectation of one kind.
 */
import { readFileSync } from 'node:fs';
import autocannon, { type AutocannonRequest } from 'autocannon';
import { meets, type KindCount, type LoadOptions, type LoadResult } from './load_generator.js';

const options = JSON.parse(process.argv[2] ?? '{}') as LoadOptions;
const kinds = options.kinds.map((kind) => ({
  ...kind,
  lines:
    kind.feed === undefined
      ? null
      : readFileSync(kind.feed.file, 'utf8')
          .split('\n')
          .filter((line) => line.length > 0),
  next: kind.feed?.start ?? 0,
  count: { name: kind.name, sent: 0, matched: 0, taken: 0 } satisfies KindCount,
}));
const totalWeight = kinds.reduce((sum, kind) => sum + kind.weight, 0);
let non2xx = 0;
let unexpected = 0;
let badSample: string | null = null;
let exhausted: string | null = null;

function pick(): (typeof kinds)[number] {
  let r = Math.random() * totalWeight;
  for (const kind of kinds) {
    r -= kind.weight;
    if (r < 0) return kind;
  }
  return kinds[kinds.length - 1] as (typeof kinds)[number];
}

process.send?.({ type: 'started' });
// eslint-disable-next-line prefer-const
let instance: ReturnType<typeof autocannon>;
const first = kinds[0];
if (first === undefined) throw new Error('a run needs at least one kind of request');
instance = autocannon({
  url: options.baseUrl,
  connections: options.connections,
  duration: options.durationS,
  timeout: 2,
  requests: [
    {
      method: first.request.method,
      path: first.request.path,
      headers: { ...first.request.headers },
      ...(first.request.body === undefined ? {} : { body: first.request.body }),
      setupRequest(request: AutocannonRequest): AutocannonRequest {
        const kind = pick();
        let body = kind.request.body;
        const headers: Record<string, string> = { ...kind.request.headers };
        if (kind.lines !== null && kind.feed !== undefined) {
          if (kind.feed.mode === 'once' && kind.next >= kind.lines.length) {
            exhausted ??= kind.name;
            instance.stop();
            return { ...request, method: 'GET', path: '/healthz', headers: {}, body: '' };
          }
          body = kind.lines[kind.next % kind.lines.length] ?? '';
          const header = kind.feed.header;
          if (header !== undefined) {
            // `<header value>\t<body>` (load_generator.ts LoadFeed).
            const tab = body.indexOf('\t');
            for (const name of Object.keys(headers)) if (name.toLowerCase() === header.toLowerCase()) delete headers[name];
            headers[header] = body.slice(0, tab);
            body = body.slice(tab + 1);
          }
          kind.next++;
          kind.count.taken++;
        }
        kind.count.sent++;
        return { ...request, method: kind.request.method, path: kind.request.path, headers, body: body ?? '' };
      },
      onResponse(status, body) {
        if (exhausted !== null) return;
        for (const kind of kinds) {
          if (meets(kind.expect, status, body)) {
            kind.count.matched++;
            return;
          }
        }
        if (status < 200 || status > 299) non2xx++;
        else unexpected++;
        badSample ??= `${status} ${body.slice(0, 160).replace(/[\r\n]/g, ' ')}`;
      },
    },
  ],
});
const result = await instance;
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
  non2xx,
  unexpected,
  // autocannon counts connection failures and timeouts together in `errors`.
  errors: { connect: Math.max(0, result.errors - result.timeouts), read: 0, write: 0, timeout: result.timeouts },
  badSample,
  kinds: kinds.map((kind) => kind.count),
  exhausted,
};
process.send?.({ type: 'result', result: loadResult }, () => process.exit(0));

/**
 * The `scale` bench's arithmetic and report (bench/report/scale_results.ts, scale.ts) and the clients it spreads its
 * load over (bench/scale/clients.ts).
 */
import t from 'tap';
import { formatScale } from '../report/scale.js';
import {
  bytesPerItem,
  costRatio,
  growsFasterThanLinearly,
  medianUs,
  startUpGrowth,
  type CostRound,
  type CostRow,
  type ScaleResults,
} from '../report/scale_results.js';
import { scaleClient, scaleClientConfigs, spreadAuthorizations } from '../scale/clients.js';
import { sha256Secret } from '../support/bench_config.js';

function round(n: number, us: number | null, valid = true): CostRound {
  return {
    round: n,
    rps: 10_000,
    serverUsPerRequest: us,
    serverCores: null,
    loadgenCores: null,
    otherCores: null,
    p50Ms: 2,
    p99Ms: 5,
    valid,
    invalidReason: valid ? null : '3 non-2xx',
  };
}

function costRow(id: string, us: (number | null)[], valid: boolean[] = us.map(() => true)): CostRow {
  return { id, label: id, clients: 10, cycled: 10, validators: 0, rounds: us.map((value, i) => round(i + 1, value, valid[i])) };
}

t.test('start-up growth is per further client, per store, between consecutive counts', async (t) => {
  const growth = startUpGrowth([
    { clients: 100_000, store: 'memory', readyMs: 12_000, rssBytes: 1_000_000_000 },
    { clients: 10, store: 'memory', readyMs: 2_000, rssBytes: 150_000_000 },
    { clients: 10_000, store: 'memory', readyMs: 3_000, rssBytes: 250_000_000 },
    { clients: 10, store: 'redis', readyMs: 2_100, rssBytes: null },
    { clients: 10_000, store: 'redis', readyMs: 3_100, rssBytes: 260_000_000 },
  ]);
  t.equal(growth.length, 3);
  const [first, second, redis] = growth;
  t.match(first, { store: 'memory', fromClients: 10, toClients: 10_000 });
  t.equal(first?.msPerThousand.toFixed(3), ((1000 / 9990) * 1000).toFixed(3), 'ms per 1,000 further clients');
  t.equal(first?.bytesPerClient?.toFixed(1), (100_000_000 / 9990).toFixed(1));
  t.equal(second?.msPerThousand.toFixed(3), ((9000 / 90_000) * 1000).toFixed(3));
  t.equal(redis?.bytesPerClient, null, 'no RSS at one end: no RSS growth');
});

t.test('faster than linear: a further client costs over twice as much at the last step as at the first', async (t) => {
  t.equal(growsFasterThanLinearly([100, 80]), false, 'cheaper per client as it grows: linear or less');
  t.equal(growsFasterThanLinearly([100, 190]), false, 'within the tolerance');
  t.equal(growsFasterThanLinearly([100, 1000]), true, 'quadratic from 10k to 100k: ~10x per client');
  t.equal(growsFasterThanLinearly([100, null, 150]), false, 'unknown steps are skipped');
  t.equal(growsFasterThanLinearly([100]), false, 'one step compares with nothing');
  t.equal(growsFasterThanLinearly([-5, 50]), true, 'a first step at noise level and a large later one');
  t.equal(growsFasterThanLinearly([-5, 3]), false);
});

t.test('cost rows: medians of the valid rounds, and the ratio to the reference', async (t) => {
  const reference = costRow('few', [50, 54, 52]);
  const many = costRow('many', [55, 1000, 57], [true, false, true]);
  t.equal(medianUs(reference), 52);
  t.equal(medianUs(many), 56, 'the invalid round is left out');
  t.equal(costRatio(many, reference)?.toFixed(4), (56 / 52).toFixed(4));
  t.equal(costRatio(many, undefined), null);
  t.equal(costRatio(costRow('none', [null]), reference), null, 'no CPU figure: no ratio');
});

t.test('bytes per record', async (t) => {
  t.equal(bytesPerItem({ store: 'redis', item: 'family', count: 1_000_000, bytes: 1_400_000_000, seconds: 100 }), 1400);
  t.ok(Number.isNaN(bytesPerItem({ store: 'redis', item: 'family', count: 0, bytes: 10, seconds: 1 })));
});

t.test('the report names every part, flags the invalid rounds and the failures', async (t) => {
  const results: ScaleResults = {
    startUp: [
      { clients: 10, store: 'memory', readyMs: 2_000, rssBytes: 150 * 1024 ** 2 },
      { clients: 10_000, store: 'memory', readyMs: 3_000, rssBytes: 250 * 1024 ** 2 },
      { clients: 100_000, store: 'memory', readyMs: 40_000, rssBytes: 2_000 * 1024 ** 2 },
    ],
    cost: [costRow('few', [50, 52]), costRow('many', [55, 57], [true, false])],
    costReference: 'few',
    basicHeaderCacheEntries: 10_000,
    store: [{ store: 'redis', item: 'device_code', count: 1_000_000, bytes: 1_013_000_000, seconds: 95 }],
    redisVersion: '7.0.15',
    failures: ['store memory: boom'],
  };
  const text = formatScale(results);
  t.match(text, '| 100,000 | memory | 40,000 | 2000 |');
  t.match(text, 'memory: start-up time **grows faster than linearly**', '3,700 ms per 1,000 clients against 100');
  t.match(text, '| many | 10 | 10,000 | 55.0 | 1.08x | 5.00 | 55.0 · ✗57.0 |');
  t.match(text, 'INVALID many, round 2: 3 non-2xx');
  t.match(text, 'at most 10,000 Basic headers');
  t.match(text, '| Redis 7.0.15, used_memory | pending device code | 1,000,000 | 1,013 | 10,526 |');
  t.match(text, 'FAILED: store memory: boom');
});

t.test('generated clients: each its own secret, stored as Base64(SHA-256)', async (t) => {
  const configs = scaleClientConfigs(3);
  t.equal(configs.length, 3);
  t.same(configs[2], {
    clientId: 'scale-client-2',
    clientSecrets: [{ value: sha256Secret('scale-secret-2') }],
    allowedGrantTypes: ['client_credentials'],
    allowedScopes: ['api1'],
    accessTokenLifetime: 3600,
  });
  t.equal(new Set(configs.map((c) => JSON.stringify(c.clientSecrets))).size, 3, 'no two clients share a secret');
});

t.test('the load spreads over the whole client list, one Basic header per client', async (t) => {
  const headers = spreadAuthorizations(100_000, 1_000);
  t.equal(headers.length, 1_000);
  t.equal(new Set(headers).size, 1_000, 'all distinct');
  const decoded = (header: string): string => Buffer.from(header.slice('Basic '.length), 'base64').toString('utf8');
  t.equal(decoded(headers[0] as string), `${scaleClient(0).clientId}:${scaleClient(0).secret}`);
  t.equal(
    decoded(headers[999] as string),
    `${scaleClient(99_900).clientId}:${scaleClient(99_900).secret}`,
    'the last one near the end of the map',
  );
  t.equal(spreadAuthorizations(10, 10).length, 10, 'every client once');
  t.throws(() => spreadAuthorizations(10, 11), RangeError);
  t.throws(() => spreadAuthorizations(10, 0), RangeError);
});

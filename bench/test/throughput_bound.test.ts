import t from 'tap';
import type { BenchResults, ContenderResult, ScenarioResult, Summary } from '../report/results.js';
import { formatThroughputBound, throughputBound } from '../report/throughput_bound.js';
import { bareSignCase } from '../sign.js';
import { benchResults, contenderResult, summary } from './summary_fixture.js';

const contender = (kind: ContenderResult['kind'], store: ContenderResult['store'], s: Summary | null): ContenderResult =>
  contenderResult(`${kind}/${store}`, kind, store, s);

function scenario(name: string, contenders: ContenderResult[]): ScenarioResult {
  return { name, measures: '', contenders, ratios: [], notes: [], hasErrors: false };
}

function results(parts: { scenarios: ScenarioResult[]; signPerCpuSecond?: number; floors?: BenchResults['floors'] }): BenchResults {
  const perCpuSecond = parts.signPerCpuSecond;
  return benchResults({
    scenarios: parts.scenarios,
    floors: parts.floors ?? null,
    sign:
      perCpuSecond === undefined
        ? null
        : {
            durationS: 2,
            nodeCryptoOverJose: null,
            cases: [{ name: bareSignCase, signatures: 1, seconds: 1, perSecond: 1, cpuSeconds: 1, perCpuSecond }],
          },
  });
}

const ceiling = scenario('ceiling', [contender('ceiling', null, summary(50_000, { serverUsPerRequest: 20 }))]);
const clientCredentials = scenario('client_credentials', [
  contender('tessera', 'memory', summary(12_000, { loadgenCores: 0.24 })),
  // The faster store is the one compared with the bound: 0.26 cores at 13,000 req/s is 20 µs.
  contender('tessera', 'redis', summary(13_000, { loadgenCores: 0.26 })),
  contender('peer', null, summary(1_800)),
]);

t.test('the bound adds the three measured costs and spreads every core over them', async (t) => {
  const bound = throughputBound(results({ scenarios: [clientCredentials, ceiling], signPerCpuSecond: 25_000 }));
  t.ok(bound);
  t.equal(bound!.signUs, 40);
  t.equal(bound!.httpUs, 20);
  t.equal(bound!.loadgenUs, 20);
  t.equal(bound!.boundRps, 25_000, '2 cores / 80 µs');
  t.equal(bound!.tesseraRps, 13_000);
  t.equal(bound!.peerRps, 1_800);
  const text = formatThroughputBound(bound!);
  t.match(text, /at most \*\*25,000 req\/s\*\*/);
  t.match(text, /Tessera: 13,000 req\/s, 52% of it/);
  t.match(text, /10x node-oidc-provider \(1,800 req\/s\) is 18,000 req\/s, 72% of it\.$/m);
});

t.test('a tenfold peer beyond the bound is called so', async (t) => {
  const fastPeer = scenario('client_credentials', [
    contender('tessera', 'memory', summary(13_000, { loadgenCores: 0.26 })),
    contender('peer', null, summary(3_000)),
  ]);
  const bound = throughputBound(results({ scenarios: [fastPeer, ceiling], signPerCpuSecond: 25_000 }));
  t.match(formatThroughputBound(bound!), /30,000 req\/s, 120% of it: beyond what any such design can reach here\./);
});

t.test('no bound without all three measurements', async (t) => {
  t.equal(throughputBound(results({ scenarios: [clientCredentials, ceiling] })), null, 'no sign micro-bench');
  t.equal(throughputBound(results({ scenarios: [clientCredentials], signPerCpuSecond: 25_000 })), null, 'no ceiling');
  t.equal(throughputBound(results({ scenarios: [ceiling], signPerCpuSecond: 25_000 })), null, 'no client_credentials');
  const failed = scenario('client_credentials', [contender('tessera', 'memory', null), contender('peer', null, summary(1_800))]);
  t.equal(throughputBound(results({ scenarios: [failed, ceiling], signPerCpuSecond: 25_000 })), null, 'no valid Tessera run');
});

t.test('a --baseline-root checkout is not the Tessera the bound is compared with', async (t) => {
  const withBaseline = scenario('client_credentials', [
    contender('tessera', 'memory', summary(12_000, { loadgenCores: 0.24 })),
    contender('baseline', 'memory', summary(14_000, { loadgenCores: 0.28 })),
  ]);
  const bound = throughputBound(results({ scenarios: [withBaseline, ceiling], signPerCpuSecond: 25_000 }));
  t.equal(bound?.tesseraRps, 12_000, 'the measured checkout, though the baseline was faster');
});

t.test("without the sign micro-bench or the ceiling scenario the bound takes the floors' signature and bare request", async (t) => {
  const floors: BenchResults['floors'] = {
    crypto: [{ alg: 'ES256', jwtSignUs: 50, signUs: 40, verifyUs: 90 }],
    http: { usPerRequest: 20, rps: 50_000, source: 'floors' },
    store: [],
    hashUs: null,
  };
  const bound = throughputBound(results({ scenarios: [clientCredentials], floors }));
  t.equal(bound?.signUs, 40, 'the bare signature, not the full JWT');
  t.equal(bound?.httpUs, 20);
  t.equal(bound?.boundRps, 25_000);
  const benched = throughputBound(
    results({
      scenarios: [clientCredentials, ceiling],
      signPerCpuSecond: 50_000,
      floors: { ...floors, http: { usPerRequest: 30, rps: 1, source: 'floors' } },
    }),
  );
  t.equal(benched?.signUs, 20, 'the sign micro-bench first');
  t.equal(benched?.httpUs, 20, 'the ceiling scenario first');
  t.equal(
    throughputBound(results({ scenarios: [clientCredentials], floors: { ...floors, http: null } })),
    null,
    'no bare request measured',
  );
});

t.test("the bare request measured in client_credentials' own rounds comes before the ceiling scenario's", async (t) => {
  const withFloor = scenario('client_credentials', [
    ...clientCredentials.contenders,
    contender('ceiling', null, summary(60_000, { serverUsPerRequest: 10 })),
  ]);
  const bound = throughputBound(results({ scenarios: [withFloor, ceiling], signPerCpuSecond: 25_000 }));
  t.equal(bound?.httpUs, 10, 'not the ceiling scenario’s 20 µs');
  t.equal(bound?.tesseraRps, 13_000, 'the ceiling contender is not a Tessera row');
});

// Worker faults (docs/operations.md, "Worker faults"): drop-in validators that end their thread,
// throw from a timer, never settle, or loop on the CPU. The affected request is answered 500 or
// 503 by the time limit; a thread that stops answering is terminated and replaced; requests
// batched or queued behind it are answered by the other thread; client_credentials on other
// connections keeps answering meanwhile; the log names the validator. End to end: `tessera start`
// in a child process with two worker threads, so the worker threads' own log lines are read too.
import t from 'tap';
import { fileURLToPath } from 'node:url';
import { basicAuthorization } from '../../helpers/basic_authorization.js';
import { startSpawnedGateway, type LogLine, type SpawnedGateway } from '../../helpers/spawned_gateway.js';
import { sha256Secret } from '../../helpers/test_gateway.js';

const fixture = (name: string) => fileURLToPath(new URL(`../../fixtures/validators/${name}.ts`, import.meta.url));
const timeoutMs = 2500;
// Generous: the machine is shared; what is measured is "by the time limit", not "fast".
const margin = 4000;

interface Answer {
  status: number;
  body: Record<string, unknown>;
  retryAfter: string | null;
  ms: number;
}

async function post(gateway: SpawnedGateway, clientId: string, params: Record<string, string>): Promise<Answer> {
  const started = performance.now();
  const res = await fetch(gateway.tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basicAuthorization(clientId) },
    body: new URLSearchParams(params).toString(),
  });
  const body = (await res.json()) as Record<string, unknown>;
  return { status: res.status, body, retryAfter: res.headers.get('retry-after'), ms: performance.now() - started };
}

const clientCredentials = (gateway: SpawnedGateway) => post(gateway, 'm2m', { grant_type: 'client_credentials', scope: 'api1' });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The worker threads answering now: rounds of requests until two distinct threads answered. */
async function threadsServing(gateway: SpawnedGateway): Promise<Set<number>> {
  const seen = new Set<number>();
  const end = Date.now() + 60_000;
  while (seen.size < 2) {
    if (Date.now() > end) throw new Error(`only threads ${[...seen].join(', ')} answered: ${gateway.output()}`);
    const answers = await Promise.all(Array.from({ length: 4 }, () => post(gateway, 'ext', { grant_type: 'test_counts_constructions' })));
    for (const a of answers) if (a.status === 200) seen.add(a.body.thread as number);
    if (seen.size < 2) await sleep(100);
  }
  return seen;
}

/** Client credentials every `everyMs` on fresh connections until `stop` resolves. */
async function clientCredentialsMeanwhile(gateway: SpawnedGateway, everyMs: number, stop: Promise<unknown>): Promise<Answer[]> {
  let stopped = false;
  void stop.then(() => (stopped = true));
  const pending: Promise<Answer>[] = [];
  while (!stopped) {
    pending.push(clientCredentials(gateway));
    await sleep(everyMs);
  }
  return Promise.all(pending);
}

const logged = (line: LogLine, msg: RegExp, grantType: string) =>
  msg.test(line.msg) && Array.isArray(line.grantTypes) && (line.grantTypes as string[]).includes(grantType);

t.test('worker faults', async (t) => {
  const gateway = await startSpawnedGateway(t, {
    validators: ['exits_thread', 'throws_from_timer', 'never_settles', 'cpu_loop', 'counts_constructions'].map(fixture),
    patch: (raw) => {
      raw.validatorTimeoutMs = timeoutMs;
      raw.workers = { threads: 2 };
      (raw.clients as unknown[]).push({
        clientId: 'ext',
        clientSecrets: [{ value: sha256Secret('secret') }],
        allowedGrantTypes: ['test_exit', 'test_timer_throw', 'test_never', 'test_cpu_loop', 'test_counts_constructions'],
        allowedScopes: ['api1'],
      });
    },
  });

  for (const [name, grantType] of [
    ['exits its thread', 'test_exit'],
    ['throws from a timer', 'test_timer_throw'],
  ] as const) {
    t.test(`a validator that ${name}: 500; requests beside it are answered; the thread is replaced`, async (t) => {
      const before = await threadsServing(gateway);
      // One turn of the gateway's event loop, so some land in the culprit's batch.
      const [culprit, ...beside] = await Promise.all([
        post(gateway, 'ext', { grant_type: grantType }),
        ...Array.from({ length: 10 }, () => clientCredentials(gateway)),
      ]);
      t.equal(culprit.status, 500);
      t.same(culprit.body, { error: 'server_error', error_description: 'The server could not complete the request.' });
      t.same(
        beside.map((a) => a.status),
        Array(10).fill(200),
        'client_credentials beside it is answered (sent again to another thread when it shared the batch)',
      );
      const line = await gateway.waitForLog(`naming ${grantType}`, (l) => logged(l, /^worker thread died$/, grantType));
      t.equal(line.level, 50, 'an error line');
      const after = await threadsServing(gateway);
      t.ok(
        [...after].some((id) => !before.has(id)),
        'a new thread serves in place of the one that died',
      );
      t.notMatch(JSON.stringify(culprit.body), /hunter2/);
    });
  }

  t.test('a validator that never settles: 503 with Retry-After at the time limit; other grants answer meanwhile', async (t) => {
    await threadsServing(gateway);
    const culprit = post(gateway, 'ext', { grant_type: 'test_never' });
    const meanwhile = await clientCredentialsMeanwhile(gateway, 100, culprit);
    const hung = await culprit;
    t.equal(hung.status, 503);
    t.equal(hung.retryAfter, '1');
    t.ok(hung.ms >= timeoutMs - 50 && hung.ms < timeoutMs + margin, `answered after ${Math.round(hung.ms)} ms`);
    t.ok(meanwhile.length >= 3);
    t.same(
      meanwhile.map((a) => a.status),
      Array(meanwhile.length).fill(200),
    );
    t.ok(
      meanwhile.every((a) => a.ms < timeoutMs + margin),
      `client_credentials meanwhile within ${Math.round(Math.max(...meanwhile.map((a) => a.ms)))} ms`,
    );
    const line = await gateway.waitForLog(
      'validator did not settle',
      (l) => l.msg === 'validator did not settle in time' && l.grantType === 'test_never',
    );
    t.equal(line.validator, 'never_settles.ts', 'the log names the module');
  });

  t.test(
    'a validator that loops on the CPU: 503 by the time limit, the thread is terminated and replaced, nothing else waits for it',
    async (t) => {
      const before = await threadsServing(gateway);
      const spinsBefore = gateway.logLines().filter((l) => l.msg === 'cpu loop validator starts spinning').length;
      // The culprit and ten client_credentials in one turn: some share its batch or queue behind it.
      const culprit = post(gateway, 'ext', { grant_type: 'test_cpu_loop', ms: '20000' });
      const beside = Array.from({ length: 10 }, () => clientCredentials(gateway));
      const meanwhile = await clientCredentialsMeanwhile(gateway, 100, culprit);
      const spun = await culprit;
      t.equal(spun.status, 503);
      t.equal(spun.retryAfter, '1');
      t.same(spun.body, { error: 'temporarily_unavailable', error_description: 'The service is temporarily unavailable. Retry later.' });
      t.ok(spun.ms < timeoutMs + margin, `answered after ${Math.round(spun.ms)} ms, not after the 20 s loop`);

      const besideAnswers = await Promise.all(beside);
      for (const [label, answers] of [
        ['beside it', besideAnswers],
        ['meanwhile', meanwhile],
      ] as const) {
        t.same(
          answers.map((a) => a.status),
          Array(answers.length).fill(200),
          `client_credentials ${label}: all answered`,
        );
        t.ok(
          answers.every((a) => a.ms < timeoutMs + margin),
          `client_credentials ${label}: the slowest in ${Math.round(Math.max(...answers.map((a) => a.ms)))} ms`,
        );
      }

      const line = await gateway.waitForLog('a stuck thread', (l) => logged(l, /^worker thread stopped answering/, 'test_cpu_loop'));
      t.equal(line.level, 50);
      const after = await threadsServing(gateway);
      t.ok(
        [...after].some((id) => !before.has(id)),
        'a new thread serves in place of the terminated one',
      );
      await sleep(500);
      t.equal(
        gateway.logLines().filter((l) => l.msg === 'cpu loop validator starts spinning').length - spinsBefore,
        1,
        'the culprit ran once: it is never sent to another thread',
      );
    },
  );
});

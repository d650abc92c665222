// Each validator class is constructed once per thread (validators/README.md, "Contract
// reference"): once on the main thread however often the gateway checks the module (before the
// config is validated, at start, at a reload), and once in each worker thread.
import t from 'tap';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { generateSigningKey } from '../../../gateway/keys/key_loader.js';
import type { RunningGateway } from '../../../gateway/start/server.js';
import { createTessera } from '../../../gateway/start/service_builder.js';
import { constructionsInThisThread } from '../../fixtures/validators/counts_constructions.js';
import { basicAuthorization } from '../../helpers/basic_authorization.js';
import { sha256Secret } from '../../helpers/test_gateway.js';

const fixture = new URL('../../fixtures/validators/counts_constructions.ts', import.meta.url);
const threads = 2;

interface Answer {
  status: number;
  thread: number;
  constructions: number;
}

async function requestGrant(gateway: RunningGateway): Promise<Answer> {
  const res = await fetch(`${gateway.url}/connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basicAuthorization('counter') },
    body: 'grant_type=test_counts_constructions&scope=api1',
  });
  const body = (await res.json()) as { thread: number; constructions: number };
  return { status: res.status, thread: body.thread, constructions: body.constructions };
}

/** Answers from every worker thread: requests go out in concurrent rounds until all have answered. */
async function answersFromEveryThread(gateway: RunningGateway): Promise<Answer[]> {
  const answers: Answer[] = [];
  for (let round = 0; round < 50 && new Set(answers.map((a) => a.thread)).size < threads; round++) {
    answers.push(...(await Promise.all(Array.from({ length: 2 * threads }, () => requestGrant(gateway)))));
  }
  return answers;
}

/** Waits until a reload took effect (the watcher may report one edit as several changes). */
async function reloadApplied(gateway: RunningGateway, edit: () => void): Promise<boolean> {
  let next = gateway.nextValidatorReload();
  edit();
  for (let attempt = 0; attempt < 5; attempt++) {
    if (await next) return true;
    next = gateway.nextValidatorReload();
  }
  return false;
}

t.test('a validator is constructed once on the main thread and once in each worker thread', async (t) => {
  const key = await generateSigningKey('ES256');
  const dir = t.testdir({
    validators: {},
    'signing.jwk.json': JSON.stringify(key.jwk),
    'tessera.json': JSON.stringify({
      issuer: 'http://127.0.0.1:5000',
      listen: { host: '127.0.0.1', port: 0 },
      // Not the default 9464: a gateway takes its management port to itself.
      management: { host: '127.0.0.1', port: 0 },
      workers: { threads },
      logLevel: 'silent',
      signing: { algorithm: 'ES256', keys: [{ file: 'signing.jwk.json' }] },
      apiScopes: [{ name: 'api1' }],
      apiResources: [{ name: 'urn:api1', scopes: ['api1'] }],
      clients: [
        {
          clientId: 'counter',
          clientSecrets: [{ value: sha256Secret('secret') }],
          allowedGrantTypes: ['test_counts_constructions'],
          allowedScopes: ['api1'],
        },
      ],
    }),
  });

  // Through the builder, as `tessera start`: it reads the validators' grant types before it
  // validates the config, then starts the gateway, which checks them again.
  const gateway = await createTessera(path.join(dir, 'tessera.json')).withEnv({}).addExtensionGrantValidator(fixture).start();
  t.teardown(() => gateway.stop());
  t.equal(constructionsInThisThread(), 1, 'the main thread constructed it once for the config check and the start');

  const first = await answersFromEveryThread(gateway);
  t.same([...new Set(first.map((a) => a.status))], [200]);
  t.equal(new Set(first.map((a) => a.thread)).size, threads, 'every worker thread answered');
  t.same([...new Set(first.map((a) => a.constructions))], [1], 'each worker thread constructed it once');

  // A reload starts new worker threads; the main thread checks the unchanged module again without
  // constructing it again.
  const other = 'export default class Other { grantType = "test_other"; async validate() {} }\n';
  t.ok(await reloadApplied(gateway, () => writeFileSync(path.join(dir, 'validators', 'other.mjs'), other)), 'the reload took effect');
  t.equal(constructionsInThisThread(), 1, 'the reload did not construct it again on the main thread');

  const second = await answersFromEveryThread(gateway);
  const firstThreads = new Set(first.map((a) => a.thread));
  t.ok(
    second.every((a) => !firstThreads.has(a.thread)),
    'the new worker threads answered',
  );
  t.equal(new Set(second.map((a) => a.thread)).size, threads, 'every new worker thread answered');
  t.same([...new Set(second.map((a) => a.constructions))], [1], 'each new worker thread constructed it once');
});

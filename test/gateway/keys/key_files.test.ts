// Configured key files reloaded without a restart (docs/operations.md, "Signing keys and
// rotation"): a replaced file is noticed by the watch, a new list by a reload call (SIGHUP), and
// a file that cannot be used keeps the running keys.
import { renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { decodeProtectedHeader } from 'jose';
import { pino } from 'pino';
import t from 'tap';
import { validateConfig } from '../../../gateway/config/load.js';
import { generateSigningKey } from '../../../gateway/keys/key_loader.js';
import { startGateway } from '../../../gateway/start/server.js';
import { basicAuthorization } from '../../helpers/basic_authorization.js';
import { freePort } from '../../helpers/free_port.js';
import { baseTestConfig, sha256Secret } from '../../helpers/test_gateway.js';

const form = 'application/x-www-form-urlencoded';

const dir = t.testdir({});
const keyA = await generateSigningKey('ES256');
const keyB = await generateSigningKey('ES256');
const keyC = await generateSigningKey('ES256');
const fileOf = (name: string) => path.join(dir, name);
const write = (name: string, jwk: object | string) => writeFileSync(fileOf(name), typeof jwk === 'string' ? jwk : JSON.stringify(jwk));
write('current.jwk.json', keyA.jwk);

const lines: string[] = [];
const logger = pino(
  { level: 'info' },
  new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  }),
);

const port = await freePort();
const raw = baseTestConfig();
raw.issuer = `http://127.0.0.1:${port}`;
raw.listen = { host: '127.0.0.1', port };
raw.apiResources = [{ name: 'urn:api1', scopes: ['api1'], secrets: [{ value: sha256Secret('api1-secret') }] }];
const configWith = (files: string[]) =>
  validateConfig({ ...raw, signing: { algorithm: 'ES256', keys: files.map((file) => ({ file })) } }, { configDir: dir, env: {} });
const gw = await startGateway({ config: configWith(['current.jwk.json']), logger, devKeyDir: dir });
t.teardown(() => gw.stop());

const jwksKids = async () =>
  ((await (await fetch(`${gw.url}/.well-known/openid-configuration/jwks`)).json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid);

async function issue(): Promise<string> {
  const res = await fetch(`${gw.url}/connect/token`, {
    method: 'POST',
    headers: { authorization: basicAuthorization('m2m', 'secret'), 'content-type': form },
    body: 'grant_type=client_credentials&scope=api1',
  });
  return ((await res.json()) as { access_token: string }).access_token;
}

async function active(token: string): Promise<boolean> {
  const res = await fetch(`${gw.url}/connect/introspect`, {
    method: 'POST',
    headers: { authorization: basicAuthorization('urn:api1', 'api1-secret'), 'content-type': form },
    body: new URLSearchParams({ token }).toString(),
  });
  return ((await res.json()) as { active: boolean }).active;
}

const kidOf = (token: string) => decodeProtectedHeader(token).kid;

t.test('a key file replaced in place is noticed by the watch, without a restart', async (t) => {
  const before = await issue();
  t.equal(kidOf(before), keyA.kid);
  // The safe way to replace a file (and what Kubernetes does with a Secret): write, then rename over.
  write('incoming.tmp', keyB.jwk);
  renameSync(fileOf('incoming.tmp'), fileOf('current.jwk.json'));
  let kids: string[] = [];
  for (let i = 0; i < 40 && kids[0] !== keyB.kid; i++) {
    await new Promise((r) => setTimeout(r, 50));
    kids = await jwksKids();
  }
  t.same(kids, [keyB.kid], 'the JWKS now has the new key');
  t.equal(kidOf(await issue()), keyB.kid, 'the workers sign with it');
});

t.test('a reload with a new file list publishes every listed key; the first signs', async (t) => {
  write('next.jwk.json', keyC.jwk);
  const old = await issue();
  const result = await gw.reloadKeys(configWith(['next.jwk.json', 'current.jwk.json']));
  t.same(result, { ok: true, changed: true, kids: [keyC.kid, keyB.kid] });
  t.same(await jwksKids(), [keyC.kid, keyB.kid], 'in the configured order');
  const fresh = await issue();
  t.equal(kidOf(fresh), keyC.kid);
  t.ok(await active(old), 'a token of the previous key is still active');
  t.ok(await active(fresh), 'and one of the new key');
  t.same(await gw.reloadKeys(), { ok: true, changed: false, kids: [keyC.kid, keyB.kid] }, 'a reload with nothing new changes nothing');
});

t.test('a bad key file on reload keeps the running keys and logs a clear error', async (t) => {
  write('next.jwk.json', '{"kty":"EC", not json');
  const result = await gw.reloadKeys();
  t.equal(result.ok, false);
  t.match(result, { error: /next\.jwk\.json: cannot read a JSON JWK/, kids: [keyC.kid, keyB.kid] });
  t.same(await jwksKids(), [keyC.kid, keyB.kid], 'the JWKS is unchanged');
  t.equal(kidOf(await issue()), keyC.kid, 'the workers still sign with the running key');
  const logged = lines.map((line) => JSON.parse(line) as { level: number; msg: string; error?: string }).filter((l) => l.level === 50);
  t.match(logged.at(-1), { msg: 'signing keys not reloaded; the running keys stay', error: /next\.jwk\.json/ });
  t.notOk(lines.join('').includes(String(keyC.jwk.d)), 'no private key material in the log');

  const rsa = await generateSigningKey('RS256');
  write('next.jwk.json', rsa.jwk);
  const other = await gw.reloadKeys();
  t.match(other, { ok: false, error: /its algorithm "RS256" is not signing\.algorithm "ES256"/ }, 'a key of another algorithm is refused');
  t.same(await jwksKids(), [keyC.kid, keyB.kid]);
});

t.test('a key of another algorithm is refused at start', async (t) => {
  const other = await freePort();
  const config = validateConfig(
    {
      ...raw,
      listen: { host: '127.0.0.1', port: other },
      signing: { algorithm: 'ES256', keys: [{ file: 'current.jwk.json' }, { file: 'next.jwk.json' }] },
    },
    { configDir: dir, env: {} },
  );
  await t.rejects(
    startGateway({ config, logger, devKeyDir: dir }),
    /next\.jwk\.json: its algorithm "RS256" is not signing\.algorithm "ES256"/,
  );
});

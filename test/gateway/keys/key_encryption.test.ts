// The page secret and store-kept signing keys encrypted at rest (issue 30; docs/security.md, "Keys
// at rest") on a real redis-server: the raw values hold no private key material and no secret,
// plaintext records of an earlier version still load and are sealed, a wrong key-encryption key
// stops the start naming the field, and a KEK rotation moves every record to the new key.
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import t, { type Test } from 'tap';
import { ConfigError } from '../../../gateway/config/config_error.js';
import { validateConfig, type LoadedConfig } from '../../../gateway/config/load.js';
import { rotationPolicyOf } from '../../../gateway/config/signing_rotation.js';
import { firstStoredKey } from '../../../gateway/keys/key_ring.js';
import { KeyEncryption, loadKeyEncryption } from '../../../gateway/keys/key_encryption.js';
import { loadPageSecret } from '../../../gateway/keys/page_secret.js';
import { StoreKeySource } from '../../../gateway/keys/store_key_source.js';
import { startGateway } from '../../../gateway/start/server.js';
import { RedisStore } from '../../../core/store/redis_store.js';
import { runCliInProcess } from '../../helpers/cli_in_process.js';
import { freePort } from '../../helpers/free_port.js';
import { startRedisServer } from '../../helpers/redis_server.js';
import { baseTestConfig } from '../../helpers/test_gateway.js';

const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (redis.warning !== null) t.comment(redis.warning);
const raw = new Redis(redis.url);
t.teardown(() => raw.quit());

const newKek = () => randomBytes(32).toString('base64');
const dir = t.testdir({});

/** A config on its own key prefix of the shared Redis, with `keyFile` holding `keks` (none: no file). */
function configOf(prefix: string, keks: readonly string[] | undefined): LoadedConfig {
  const document = baseTestConfig();
  document.store = { type: 'redis', url: redis.url, keyPrefix: prefix };
  if (keks !== undefined) {
    const file = path.join(dir, `${prefix.replace(/\W/g, '')}-${keks.length}-${Math.random().toString(36).slice(2)}.keys`);
    writeFileSync(file, `# key-encryption keys, the first encrypts\n${keks.join('\n')}\n`);
    document.keyEncryption = { keyFile: file };
  }
  return validateConfig(document, { configDir: dir, env: {} });
}

/** What a gateway loads at start, with the same modules: the page secret and the signing keys. */
async function loadSecrets(t: Test, config: LoadedConfig) {
  const store = new RedisStore({ url: redis.url, keyPrefix: (config.store as { keyPrefix: string }).keyPrefix });
  t.teardown(() => store.close());
  const encryption = await loadKeyEncryption(config, {});
  const pageSecret = await loadPageSecret(config, store, dir, encryption);
  const source = new StoreKeySource(
    store,
    'ES256',
    rotationPolicyOf(config),
    () => firstStoredKey(config, store, dir),
    undefined,
    encryption,
  );
  await source.load();
  const keys = await source.list();
  return { pageSecret, keys, source };
}

/** Every value under `prefix`, raw bytes as latin1 text (strings and set members). */
async function rawValues(prefix: string): Promise<string[]> {
  const values: string[] = [];
  for (const key of await raw.keys(`${prefix}*`)) {
    if ((await raw.type(key)) === 'string') values.push(((await raw.getBuffer(key)) ?? Buffer.alloc(0)).toString('latin1'));
    else values.push(...(await raw.smembers(key)));
  }
  return values;
}

function assertNothingInTheClear(t: Test, values: readonly string[], pageSecret: string, privateD: readonly string[]): void {
  const all = values.join('\n');
  t.ok(values.length >= 2, `${values.length} values read`);
  t.notMatch(all, '"d":', 'no JSON private member');
  t.notOk(all.includes(pageSecret), 'no page secret');
  for (const d of privateD) t.notOk(all.includes(d), 'no private key scalar');
  t.match(all, 'tessera-kek.v1.', 'sealed values');
}

const dOf = (keys: readonly { jwk: { d?: string } }[]) => keys.map((k) => k.jwk.d ?? 'no d');

t.test('with a KEK: neither the page secret nor a private key is in Redis in the clear', async (t) => {
  const kek = newKek();
  const config = configOf('enc1:', [kek]);
  const { pageSecret, keys, source } = await loadSecrets(t, config);
  t.equal(keys.length, 1);
  t.type(keys[0]?.jwk.d, 'string', 'the loaded key is a private key');
  await source.rotate();
  const all = await source.list();
  t.equal(all.length, 2, 'a rotated key too');
  assertNothingInTheClear(t, await rawValues('enc1:'), pageSecret, dOf(all));
  // `tessera keys list` of the gateways' config opens them with the same KEK, and only with it.
  const file = path.join(dir, 'enc1.json');
  writeFileSync(file, JSON.stringify({ ...baseTestConfig(), store: { type: 'redis', url: redis.url, keyPrefix: 'enc1:' } }));
  const listed = await runCliInProcess(['keys', 'list', '--config', file], { env: { TESSERA_KEY_ENCRYPTION_KEY: kek } });
  t.equal(listed.code, 0, listed.stderr);
  for (const key of all) t.match(listed.stdout, key.kid);
  const refused = await runCliInProcess(['keys', 'list', '--config', file]);
  t.equal(refused.code, 2);
  t.match(refused.stderr, /keyEncryption: signing key \S+ in the store is encrypted under key-encryption key \S+, and no key is set/);
  // Another gateway with the same KEK reads the same secret and keys.
  const again = await loadSecrets(t, config);
  t.equal(again.pageSecret, pageSecret);
  t.same(
    again.keys.map((k) => k.kid),
    all.map((k) => k.kid),
  );
});

t.test('plaintext records of an earlier version load, and are sealed once a KEK is set', async (t) => {
  const before = await loadSecrets(t, configOf('enc2:', undefined));
  const plain = (await rawValues('enc2:')).join('\n');
  t.ok(plain.includes(before.pageSecret), 'without a KEK the secret is in the clear (the old behaviour)');
  t.ok(plain.includes(before.keys[0]?.jwk.d ?? '?'), 'and the private key');
  const after = await loadSecrets(t, configOf('enc2:', [newKek()]));
  t.equal(after.pageSecret, before.pageSecret, 'the same page secret: sessions survive the upgrade');
  t.same(
    after.keys.map((k) => k.kid),
    before.keys.map((k) => k.kid),
    'the same signing key',
  );
  assertNothingInTheClear(t, await rawValues('enc2:'), after.pageSecret, dOf(after.keys));
});

t.test('KEK rotation: the new key first, the old one second; then the old one can go', async (t) => {
  const [oldKek, nextKek] = [newKek(), newKek()];
  const first = await loadSecrets(t, configOf('enc3:', [oldKek]));
  const both = await loadSecrets(t, configOf('enc3:', [nextKek, oldKek]));
  t.equal(both.pageSecret, first.pageSecret);
  const nextId = (await loadKeyEncryption(configOf('enc3:', [nextKek]), {})).ids[0] as string;
  const sealed = (await rawValues('enc3:')).filter((v) => v.includes('tessera-kek.v1.'));
  t.ok(sealed.length >= 2);
  t.ok(
    sealed.every((v) => v.includes(`tessera-kek.v1.${nextId}.`)),
    'every sealed value is under the new KEK',
  );
  const onlyNext = await loadSecrets(t, configOf('enc3:', [nextKek]));
  t.equal(onlyNext.pageSecret, first.pageSecret, 'the old KEK is no longer needed');
  t.same(
    onlyNext.keys.map((k) => k.kid),
    first.keys.map((k) => k.kid),
  );
  await t.rejects(loadSecrets(t, configOf('enc3:', [oldKek])), { name: 'ConfigError' }, 'the old KEK alone no longer opens them');
});

t.test('a wrong KEK, or none, stops the start with an error naming the field', async (t) => {
  await loadSecrets(t, configOf('enc4:', [newKek()]));
  const start = async (config: LoadedConfig) => {
    const port = await freePort();
    const gateway = await startGateway({
      config: { ...config, listen: { ...config.listen, host: '127.0.0.1', port } },
      devKeyDir: dir,
    });
    await gateway.stop();
  };
  const wrong = await start(configOf('enc4:', [newKek()])).catch((error: unknown) => error);
  t.type(wrong, ConfigError);
  t.match((wrong as ConfigError).problems, [
    { path: 'keyEncryption.keyFile', message: /encrypted under key-encryption key \S+, which is not among/ },
  ]);
  // `tessera start`, the KEK in its environment: exit 2, the variable named, the key not echoed.
  const file = path.join(dir, 'enc4.json');
  writeFileSync(file, JSON.stringify({ ...baseTestConfig(), store: { type: 'redis', url: redis.url, keyPrefix: 'enc4:' } }));
  const wrongKek = newKek();
  const cli = await runCliInProcess(['start', '--config', file], { env: { TESSERA_KEY_ENCRYPTION_KEY: wrongKek } });
  t.equal(cli.code, 2, 'a config error');
  t.match(
    cli.stderr,
    /env\.TESSERA_KEY_ENCRYPTION_KEY: \S+ .* is encrypted under key-encryption key \S+, which is not among this gateway's/,
  );
  t.notOk(cli.stderr.includes(wrongKek));
  const none = await start(configOf('enc4:', undefined)).catch((error: unknown) => error);
  t.type(none, ConfigError);
  t.match((none as ConfigError).problems, [{ path: 'keyEncryption', message: /set TESSERA_KEY_ENCRYPTION_KEY or keyEncryption\.keyFile/ }]);
  const short = (() => {
    try {
      return KeyEncryption.fromTexts(['c2hvcnQ='], 'env.TESSERA_KEY_ENCRYPTION_KEY');
    } catch (error) {
      return error;
    }
  })();
  t.match((short as ConfigError).problems, [{ path: 'env.TESSERA_KEY_ENCRYPTION_KEY', message: /key 1 is not 32 bytes in base64/ }]);
});

t.test('TESSERA_KEY_ENCRYPTION_KEY: keys separated by commas, preferred over the file', async (t) => {
  const [a, b] = [newKek(), newKek()];
  const fromEnv = await loadKeyEncryption(configOf('enc5:', [newKek()]), { TESSERA_KEY_ENCRYPTION_KEY: `${a}, ${b}` });
  t.equal(fromEnv.source, 'env.TESSERA_KEY_ENCRYPTION_KEY');
  t.equal(fromEnv.ids.length, 2);
  const sealed = fromEnv.seal('x', 'test');
  t.equal(KeyEncryption.fromTexts([b, a], 'test').open(sealed, 'test', 'x'), 'x', 'any listed key decrypts');
});

t.test('without a KEK on Redis: a warning at start, and check-config says so', async (t) => {
  const lines: string[] = [];
  const logger = pino(
    { level: 'warn' },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    }),
  );
  const config = configOf('enc6:', undefined);
  const port = await freePort();
  const gateway = await startGateway({
    config: { ...config, listen: { ...config.listen, host: '127.0.0.1', port } },
    devKeyDir: dir,
    logger,
  });
  await gateway.stop();
  t.ok(
    lines.some((l) => l.includes('no key-encryption key')),
    'the start warns',
  );

  const file = path.join(dir, 'check.json');
  const document = { ...baseTestConfig(), store: { type: 'redis', url: redis.url } };
  writeFileSync(file, JSON.stringify(document));
  const plain = await runCliInProcess(['check-config', file]);
  t.equal(plain.code, 0, plain.stderr);
  t.match(plain.stdout, /key encryption +none: WARNING the page secret and store-kept signing keys are kept in the store in plaintext/);
  const withKek = await runCliInProcess(['check-config', file], { env: { TESSERA_KEY_ENCRYPTION_KEY: newKek() } });
  t.match(withKek.stdout, /key encryption +AES-256-GCM under TESSERA_KEY_ENCRYPTION_KEY: key \S+ encrypts/);
  const bad = await runCliInProcess(['check-config', file], { env: { TESSERA_KEY_ENCRYPTION_KEY: 'not-a-key' } });
  t.equal(bad.code, 2);
  t.match(bad.stderr, 'env.TESSERA_KEY_ENCRYPTION_KEY');
  t.notMatch(bad.stderr, 'not-a-key', 'the value is not echoed');
});

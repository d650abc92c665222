import t from 'tap';
import { explainConfig } from '../../../gateway/cli/check_config_command.js';
import { ConfigError, formatProblems } from '../../../gateway/config/config_error.js';
import { validateConfig } from '../../../gateway/config/load.js';
import type { LoadedConfig } from '../../../gateway/config/load.js';

type Json = Record<string, unknown>;
const secretValue = 'K7gNU3sdo+OL0wNhqoVWhr3g6s1xYv72ol/pe/Unols=';

function baseConfig(store?: Json): Json {
  return {
    issuer: 'https://auth.example.com',
    apiScopes: [{ name: 'api1' }],
    apiResources: [{ name: 'urn:api1', scopes: ['api1'] }],
    clients: [
      { clientId: 'm2m', clientSecrets: [{ value: secretValue }], allowedGrantTypes: ['client_credentials'], allowedScopes: ['api1'] },
    ],
    ...(store === undefined ? {} : { store }),
  };
}

function load(raw: Json, env: NodeJS.ProcessEnv = {}): LoadedConfig {
  return validateConfig(raw, { configDir: '/etc/tessera', env });
}

function problemsOf(raw: Json, env: NodeJS.ProcessEnv = {}): string[] {
  try {
    load(raw, env);
    return [];
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return formatProblems(error.problems).split('\n');
  }
}

const sentinelStore = { type: 'redis-sentinel', sentinels: ['s1:26379', '10.0.0.2:26379', '[::1]:26380'], name: 'mymaster' };

t.test('a redis-sentinel store takes its defaults', async (t) => {
  t.same(load(baseConfig(sentinelStore)).store, {
    ...sentinelStore,
    tls: false,
    waitForReplicas: 0,
    keyPrefix: 'tessera:',
    commandTimeoutMs: 500,
  });
});

t.test('every problem of a redis-sentinel store names its dotted path', async (t) => {
  t.same(problemsOf(baseConfig({ type: 'redis-sentinel', sentinels: ['s1'], name: '' })), [
    'store.sentinels[0]: must be host:port (e.g. "sentinel-1:26379")',
    'store.name: must not be empty',
  ]);
  t.match(problemsOf(baseConfig({ type: 'redis-sentinel', sentinels: [], name: 'm' })), [/^store\.sentinels: /]);
  t.match(problemsOf(baseConfig({ type: 'redis-sentinel', sentinels: ['s1:70000'], name: 'm' })), [
    /^store\.sentinels\[0\]: must be host:port/,
  ]);
  t.match(problemsOf(baseConfig({ type: 'redis-sentinel', sentinels: ['s1:26379'] })), [/^store\.name: /]);
  t.match(problemsOf(baseConfig({ ...sentinelStore, tls: 'yes' })), [/^store\.tls: /]);
  t.same(problemsOf(baseConfig({ ...sentinelStore, url: 'redis://x' })), ['store.url: unknown field']);
});

t.test('check-config describes the store and says which passwords are set, never what they are', async (t) => {
  const config = load(
    baseConfig({ ...sentinelStore, password: 'hunter2', sentinelPassword: 'sentinel-secret', tls: true, waitForReplicas: 1 }),
  );
  const text = explainConfig(config, 'tessera.json');
  t.match(
    text,
    /store +redis-sentinel master "mymaster" via s1:26379 10\.0\.0\.2:26379 \[::1\]:26380 \(key prefix "tessera:", Redis password, Sentinel password, TLS, each write waits for 1 replica\)/,
  );
  t.notMatch(text, /hunter2|sentinel-secret/);
});

t.test('TESSERA_REDIS_SENTINELS and TESSERA_REDIS_SENTINEL_NAME switch the store to Sentinel', async (t) => {
  const config = load(baseConfig({ type: 'redis', url: 'redis://cache:6379', keyPrefix: 'auth:' }), {
    TESSERA_REDIS_SENTINELS: 's1:26379, s2:26379',
    TESSERA_REDIS_SENTINEL_NAME: 'mymaster',
  });
  t.same(config.store, {
    type: 'redis-sentinel',
    sentinels: ['s1:26379', 's2:26379'],
    name: 'mymaster',
    tls: false,
    waitForReplicas: 0,
    keyPrefix: 'auth:',
    commandTimeoutMs: 500,
  });
  t.same(config.envOverrides, ['TESSERA_REDIS_SENTINELS', 'TESSERA_REDIS_SENTINEL_NAME']);
});

t.test('TESSERA_REDIS_SENTINELS keeps the name, passwords and TLS of a Sentinel store in the file', async (t) => {
  const config = load(baseConfig({ ...sentinelStore, password: 'p', tls: true }), { TESSERA_REDIS_SENTINELS: 'other:26379' });
  t.same(config.store, {
    ...sentinelStore,
    sentinels: ['other:26379'],
    password: 'p',
    tls: true,
    waitForReplicas: 0,
    keyPrefix: 'tessera:',
    commandTimeoutMs: 500,
  });
  t.same(load(baseConfig(sentinelStore), { TESSERA_REDIS_SENTINEL_NAME: 'renamed' }).store, {
    ...sentinelStore,
    name: 'renamed',
    tls: false,
    waitForReplicas: 0,
    keyPrefix: 'tessera:',
    commandTimeoutMs: 500,
  });
});

t.test('bad Sentinel overrides are reported under env.NAME', async (t) => {
  t.same(problemsOf(baseConfig(), { TESSERA_REDIS_SENTINELS: 's1:26379' }), [
    'env.TESSERA_REDIS_SENTINELS: needs TESSERA_REDIS_SENTINEL_NAME (the master group) unless the file has a "redis-sentinel" store',
  ]);
  t.same(problemsOf(baseConfig(), { TESSERA_REDIS_SENTINEL_NAME: 'm' }), [
    'env.TESSERA_REDIS_SENTINEL_NAME: needs TESSERA_REDIS_SENTINELS or a "redis-sentinel" store in the file',
  ]);
  t.same(problemsOf(baseConfig(), { TESSERA_REDIS_SENTINELS: 's1:26379,redis://s2', TESSERA_REDIS_SENTINEL_NAME: 'm' }), [
    'env.TESSERA_REDIS_SENTINELS: must be a comma-separated list of host:port (e.g. "s1:26379,s2:26379")',
  ]);
  t.same(
    problemsOf(baseConfig(), { TESSERA_REDIS_SENTINELS: 's1:26379', TESSERA_REDIS_SENTINEL_NAME: 'm', TESSERA_REDIS_URL: 'redis://x' }),
    ['env.TESSERA_REDIS_SENTINELS: cannot be combined with TESSERA_REDIS_URL: set one store'],
  );
});

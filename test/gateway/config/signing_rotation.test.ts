// `signing.rotation` (gateway/config/signing_rotation.ts): durations, defaults, and the configs
// refused because a rotation would break tokens.
import t from 'tap';
import { ConfigError } from '../../../gateway/config/config_error.js';
import { validateConfig } from '../../../gateway/config/load.js';
import { rotationPolicyOf } from '../../../gateway/config/signing_rotation.js';
import { baseTestConfig } from '../../helpers/test_gateway.js';

function configWith(signing: Record<string, unknown>, accessTokenLifetime = 3600) {
  const raw = baseTestConfig();
  raw.clients = [
    {
      clientId: 'm2m',
      clientSecrets: [{ value: 'K7gNU3sdo+OL0wNhqoVWhr3g6s1xYv72ol/pe/Unols=' }],
      allowedGrantTypes: ['client_credentials'],
      allowedScopes: ['api1'],
      accessTokenLifetime,
    },
  ];
  raw.signing = signing;
  return validateConfig(raw, { configDir: '/tmp', env: {} });
}

function problemsOf(signing: Record<string, unknown>, accessTokenLifetime?: number) {
  try {
    configWith(signing, accessTokenLifetime);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

t.test('durations take seconds or a unit, and the defaults follow the JWKS max-age and the token lifetimes', async (t) => {
  const config = configWith({ rotation: { every: '90d', propagation: '10m', retention: 7200 } });
  t.same(rotationPolicyOf(config), { everyMs: 90 * 86_400_000, propagationMs: 600_000, retentionMs: 7_200_000 });
  const defaults = configWith({ jwksMaxAgeSeconds: 120, rotation: { every: '1h' } }, 1800);
  t.same(rotationPolicyOf(defaults), { everyMs: 3_600_000, propagationMs: 120_000, retentionMs: 1_800_000 });
  t.same(
    rotationPolicyOf(configWith({})),
    { everyMs: null, propagationMs: 300_000, retentionMs: 3_600_000 },
    'no schedule: manual rotation only',
  );
});

t.test('a retention shorter than the longest token lifetime is refused, by name', async (t) => {
  t.same(problemsOf({ rotation: { every: '1d', retention: '30m' } }, 3600), [
    {
      path: 'signing.rotation.retention',
      message: 'must be at least the longest token lifetime (3600 s): a retired key must verify every token it signed',
    },
  ]);
});

t.test('a propagation shorter than the JWKS max-age is refused', async (t) => {
  t.same(problemsOf({ jwksMaxAgeSeconds: 600, rotation: { every: '1d', propagation: '5m' } }), [
    {
      path: 'signing.rotation.propagation',
      message: 'must be at least signing.jwksMaxAgeSeconds (600 s): caches could still hold a JWKS without the new key',
    },
  ]);
});

t.test('a schedule no longer than the propagation, rotation with key files, and a bad duration are refused', async (t) => {
  t.same(problemsOf({ rotation: { every: '5m', propagation: '5m' } }), [
    { path: 'signing.rotation.every', message: 'must be longer than signing.rotation.propagation' },
  ]);
  t.match(problemsOf({ keys: [{ file: 'k.json' }], rotation: { every: '1d' } }), [
    { path: 'signing.rotation', message: /applies to keys kept in the store/ },
  ]);
  t.match(problemsOf({ rotation: { every: '3 weeks' } }), [{ path: 'signing.rotation.every' }]);
});

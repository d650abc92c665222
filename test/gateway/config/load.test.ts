import t from 'tap';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, formatProblems } from '../../../gateway/config/config_error.js';
import { loadConfigFile, validateConfig, type LoadedConfig, type ValidateConfigOptions } from '../../../gateway/config/load.js';
import { checkSigningKeyFiles } from '../../../gateway/config/signing_key_files.js';
import { configSchema } from '../../../gateway/config/schema.js';
import { builtInGrantTypes } from '../../../core/grant_types.js';
import { generateSigningJwk } from '../../../gateway/cli/keys_generate_command.js';
import { hashClientSecret } from '../../../core/crypto/client_secret.js';
import { verifyPassword } from '../../../core/crypto/password_hash.js';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const demoPath = join(repoRoot, 'config/demo.json');
const secretValue = 'K7gNU3sdo+OL0wNhqoVWhr3g6s1xYv72ol/pe/Unols=';
// A valid scrypt PHC string (ln=1 keeps it cheap; validation only parses it).
const passwordHash = '$scrypt$ln=1,r=8,p=1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';

type Json = Record<string, unknown>;

/** A small valid config; tests break one thing at a time. */
function baseConfig(): Json {
  return {
    issuer: 'https://auth.example.com',
    identityResources: [{ name: 'openid', claims: ['sub'] }, { name: 'profile' }],
    apiScopes: [{ name: 'api1' }, { name: 'api2' }],
    apiResources: [{ name: 'urn:api1', scopes: ['api1'] }],
    clients: [
      { clientId: 'm2m', clientSecrets: [{ value: secretValue }], allowedGrantTypes: ['client_credentials'], allowedScopes: ['api1'] },
      {
        clientId: 'web',
        clientSecrets: [{ value: secretValue }],
        allowedGrantTypes: ['authorization_code', 'refresh_token'],
        redirectUris: ['https://app.example.com/callback'],
        allowedScopes: ['openid', 'profile', 'api1', 'offline_access'],
        allowOfflineAccess: true,
      },
      { clientId: 'spa', requireClientSecret: false, allowedGrantTypes: ['password'], allowedScopes: ['openid'] },
    ],
    users: [{ subjectId: '1', username: 'alice', passwordHash }],
  };
}

function clients(config: Json): Json[] {
  return config.clients as Json[];
}

const options: ValidateConfigOptions = { configDir: '/etc/tessera', env: {} };

/** The formatted problem lines, or [] when the config is valid. */
function problemsOf(raw: unknown, overrides: Partial<ValidateConfigOptions> = {}): string[] {
  try {
    validateConfig(raw, { ...options, ...overrides });
    return [];
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return formatProblems(error.problems).split('\n');
  }
}

function withChange(change: (config: Json) => void): Json {
  const config = baseConfig();
  change(config);
  return config;
}

t.test('the demo config', async (t) => {
  const demo = await loadConfigFile(demoPath, { env: {} });

  t.test('validates', async (t) => {
    t.equal(demo.issuer, 'http://127.0.0.1:5000');
    t.same(demo.store, { type: 'memory', maxRecords: 1_000_000 });
    t.equal(demo.workers.threads, 2);
    t.same(demo.signing.keys, [], 'uses the development key');
    t.equal(demo.validatorsDir, join(repoRoot, 'validators'), 'points at the shipped validators');
  });

  t.test('has a client for every built-in grant and a delegation client', async (t) => {
    const grants = new Set(demo.clients.flatMap((client) => client.allowedGrantTypes));
    for (const grant of [...builtInGrantTypes, 'delegation']) t.ok(grants.has(grant), grant);
    t.same(
      demo.clients.map((client) => client.clientId),
      ['m2m', 'ro.client', 'web', 'spa', 'tv', 'frontend', 'api1', 'exchanger'],
    );
  });

  t.test('lists demo credentials that match the stored hashes', async (t) => {
    const credentials = demo.demoCredentials ?? [];
    t.ok(credentials.length > 0);
    for (const credential of credentials) {
      if (credential.kind === 'user') {
        const user = demo.users.find((candidate) => candidate.username === credential.id);
        t.ok(user && (await verifyPassword(credential.secret, user.passwordHash)), `user ${credential.id}`);
      } else if (credential.secret !== '') {
        const secrets =
          credential.kind === 'client'
            ? demo.clients.find((client) => client.clientId === credential.id)?.clientSecrets
            : demo.apiResources.find((resource) => resource.name === credential.id)?.secrets;
        t.ok(
          secrets?.some((secret) => secret.value === hashClientSecret(credential.secret)),
          `${credential.kind} ${credential.id}`,
        );
      }
    }
  });
});

t.test('schema rules', async (t) => {
  t.test('the base config of these tests is valid', async (t) => {
    t.same(problemsOf(baseConfig()), []);
  });

  t.test('a missing issuer is reported as required', async (t) => {
    t.same(problemsOf(withChange((c) => delete c.issuer)), ['issuer: is required']);
  });

  t.test('an issuer must be an http(s) URL', async (t) => {
    t.same(problemsOf(withChange((c) => (c.issuer = 'ftp://auth.example.com'))), ['issuer: must be an http(s) URL']);
  });

  t.test('an issuer must not end with a slash', async (t) => {
    t.same(problemsOf(withChange((c) => (c.issuer = 'https://auth.example.com/'))), [
      'issuer: must not end with "/" or carry a query or fragment',
    ]);
  });

  t.test('the document must be an object', async (t) => {
    t.same(problemsOf([]), ['(root): must be an object (got array)']);
  });

  t.test('an unknown field is reported at its own path', async (t) => {
    t.same(
      problemsOf(
        withChange((c) => {
          clients(c)[0]!.allowedGrantType = ['password'];
          c['log-level'] = 'debug';
        }),
      ),
      ['clients[0].allowedGrantType: unknown field', '["log-level"]: unknown field'],
    );
  });

  t.test('a number given as a string is rejected', async (t) => {
    t.same(problemsOf(withChange((c) => (c.listen = { port: '5000' }))), ['listen.port: must be a number (got string)']);
  });

  t.test('a port must be between 0 and 65535', async (t) => {
    t.same(problemsOf(withChange((c) => (c.listen = { port: 70000 }))), ['listen.port: must be at most 65535']);
  });

  t.test('a worker count must be a whole number of at least 1', async (t) => {
    t.same(problemsOf(withChange((c) => (c.workers = { threads: 1.5 }))), ['workers.threads: must be an integer (got 1.5)']);
    t.same(problemsOf(withChange((c) => (c.workers = { threads: 0 }))), ['workers.threads: must be at least 1']);
  });

  t.test('the store type must be memory, redis, redis-cluster or redis-sentinel', async (t) => {
    t.same(problemsOf(withChange((c) => (c.store = { type: 'postgres' }))), [
      'store.type: must be one of "memory", "redis", "redis-cluster", "redis-sentinel"',
    ]);
  });

  t.test('a redis store needs a redis:// URL', async (t) => {
    t.same(problemsOf(withChange((c) => (c.store = { type: 'redis' }))), ['store.url: is required']);
    t.same(problemsOf(withChange((c) => (c.store = { type: 'redis', url: 'http://cache:6379' }))), [
      'store.url: must be a redis:// or rediss:// URL',
    ]);
  });

  t.test('the signing algorithm must be a supported one', async (t) => {
    t.same(problemsOf(withChange((c) => (c.signing = { algorithm: 'HS256' }))), [
      'signing.algorithm: must be one of "ES256", "EdDSA", "RS256", "PS256"',
    ]);
  });

  t.test('a client secret must be a Base64 SHA-256', async (t) => {
    t.same(problemsOf(withChange((c) => (clients(c)[0]!.clientSecrets = [{ value: 'secret' }]))), [
      'clients[0].clientSecrets[0].value: must be Base64(SHA-256(secret)) as printed by "tessera hash-secret"',
    ]);
  });

  t.test('a secret expiration must be an ISO 8601 date', async (t) => {
    t.same(problemsOf(withChange((c) => (clients(c)[0]!.clientSecrets = [{ value: secretValue, expiration: 'tomorrow' }]))), [
      'clients[0].clientSecrets[0].expiration: must be an ISO 8601 date or date-time',
    ]);
  });

  t.test('a client must list at least one grant type', async (t) => {
    t.same(problemsOf(withChange((c) => (clients(c)[0]!.allowedGrantTypes = []))), [
      'clients[0].allowedGrantTypes: must list at least one grant type',
    ]);
  });

  t.test('a client id must not be empty', async (t) => {
    t.same(problemsOf(withChange((c) => (clients(c)[0]!.clientId = ''))), ['clients[0].clientId: must not be empty']);
  });

  t.test('a redirect URI must be absolute and carry no fragment', async (t) => {
    t.same(problemsOf(withChange((c) => (clients(c)[1]!.redirectUris = ['/callback', 'https://app.example.com/cb#x']))), [
      'clients[1].redirectUris[0]: must be an absolute URL',
      'clients[1].redirectUris[1]: must not contain a fragment (RFC 6749 §3.1.2)',
    ]);
  });

  t.test('plain PKCE cannot be enabled', async (t) => {
    t.same(problemsOf(withChange((c) => (clients(c)[1]!.allowPlainTextPkce = true))), [
      'clients[1].allowPlainTextPkce: plain PKCE is not supported; S256 only',
    ]);
  });

  t.test('a lifetime must be a positive whole number of seconds', async (t) => {
    t.same(problemsOf(withChange((c) => (clients(c)[0]!.accessTokenLifetime = 0))), [
      'clients[0].accessTokenLifetime: must be greater than 0',
    ]);
  });

  t.test('refreshTokenUsage must be oneTimeOnly or reUse', async (t) => {
    t.same(problemsOf(withChange((c) => (clients(c)[1]!.refreshTokenUsage = 'OneTimeOnly'))), [
      'clients[1].refreshTokenUsage: must be one of "oneTimeOnly", "reUse"',
    ]);
  });

  t.test('a user claim must be a string, number, boolean or array of strings', async (t) => {
    t.same(problemsOf(withChange((c) => ((c.users as Json[])[0]!.claims = { address: { city: 'Oslo' }, 'x-id': 1 }))), [
      'users[0].claims.address: must be a string, number, boolean or array of strings',
    ]);
  });

  t.test('a user must have a password hash', async (t) => {
    t.same(problemsOf(withChange((c) => delete (c.users as Json[])[0]!.passwordHash)), ['users[0].passwordHash: is required']);
  });

  t.test('demo credentials have a kind, an id and a secret', async (t) => {
    t.same(problemsOf(withChange((c) => (c.demoCredentials = [{ kind: 'robot', id: 'x' }]))), [
      'demoCredentials[0].kind: must be one of "client", "user", "apiResource"',
      'demoCredentials[0].secret: is required',
    ]);
  });
});

t.test('cross-reference rules', async (t) => {
  t.test('an unknown grant type is named with its path', async (t) => {
    t.same(problemsOf(withChange((c) => (clients(c)[2]!.allowedGrantTypes = ['pasword']))), [
      'clients[2].allowedGrantTypes[0]: unknown grant type "pasword"',
    ]);
  });

  t.test("are reported beside schema problems, in the file's indices, but not for a value the schema refused", async (t) => {
    const config = withChange((c) => {
      clients(c)[0]!.clientId = 7; // this entry is left out of the cross-reference checks
      clients(c)[1]!.accessTokenLifetime = 'long'; // refused: its default must not make up problems
      clients(c)[2]!.allowedGrantTypes = ['pasword'];
      c.listen = { port: 'eighty' };
    });
    t.same(problemsOf(config), [
      'listen.port: must be a number (got string)',
      'clients[0].clientId: must be a string (got number)',
      'clients[1].accessTokenLifetime: must be a number (got string)',
      'clients[2].allowedGrantTypes[0]: unknown grant type "pasword"',
    ]);
  });

  t.test('the shipped extension grants are known', async (t) => {
    const config = withChange((c) => {
      clients(c)[0]!.allowedGrantTypes = ['delegation', 'urn:ietf:params:oauth:grant-type:token-exchange'];
    });
    t.same(problemsOf(config), []);
  });

  t.test('grant types registered by validators are known when passed as extraGrantTypes', async (t) => {
    const config = withChange((c) => (clients(c)[0]!.allowedGrantTypes = ['urn:example:custom']));
    t.same(problemsOf(config), ['clients[0].allowedGrantTypes[0]: unknown grant type "urn:example:custom"']);
    t.same(problemsOf(config, { extraGrantTypes: ['urn:example:custom'] }), []);
  });

  t.test('an allowed scope must be an identity resource, an API scope or offline_access', async (t) => {
    t.same(problemsOf(withChange((c) => (clients(c)[0]!.allowedScopes = ['api1', 'api3']))), [
      'clients[0].allowedScopes[1]: unknown scope "api3"',
    ]);
  });

  t.test('an API resource may only list API scopes', async (t) => {
    t.same(problemsOf(withChange((c) => (c.apiResources = [{ name: 'urn:api1', scopes: ['api1', 'openid'] }]))), [
      'apiResources[0].scopes[1]: unknown API scope "openid"',
    ]);
  });

  t.test('client ids are unique', async (t) => {
    t.same(problemsOf(withChange((c) => (clients(c)[2]!.clientId = 'm2m'))), [
      'clients[2].clientId: duplicate client id "m2m" (also clients[0].clientId)',
    ]);
  });

  t.test('identity resources and API scopes share one scope namespace', async (t) => {
    t.same(problemsOf(withChange((c) => (c.apiScopes = [{ name: 'api1' }, { name: 'profile' }, { name: 'api1' }]))), [
      'apiScopes[1].name: duplicate scope name "profile" (also identityResources[1].name)',
      'apiScopes[2].name: duplicate scope name "api1" (also apiScopes[0].name)',
    ]);
  });

  t.test('offline_access cannot be registered as a scope', async (t) => {
    t.same(problemsOf(withChange((c) => (c.apiScopes = [{ name: 'api1' }, { name: 'offline_access' }]))), [
      'apiScopes[1].name: "offline_access" is built in and cannot be registered',
    ]);
  });

  t.test('API resource names are unique', async (t) => {
    t.same(problemsOf(withChange((c) => (c.apiResources = [{ name: 'urn:api1' }, { name: 'urn:api1', scopes: ['api2'] }]))), [
      'apiResources[1].name: duplicate API resource name "urn:api1" (also apiResources[0].name)',
    ]);
  });

  t.test('usernames are unique within a tenant and identity provider', async (t) => {
    const user = (extra: Json): Json => ({ subjectId: String(Math.random()), username: 'alice', passwordHash, ...extra });
    t.same(problemsOf(withChange((c) => (c.users = [user({}), user({ idp: 'local' })]))), [
      'users[1].username: duplicate user "alice" in idp "local" (also users[0].username)',
    ]);
    t.same(problemsOf(withChange((c) => (c.users = [user({ tenant: 'a' }), user({ tenant: 'a' })]))), [
      'users[1].username: duplicate user "alice" in tenant "a", idp "local" (also users[0].username)',
    ]);
    t.same(problemsOf(withChange((c) => (c.users = [user({}), user({ tenant: 'a' }), user({ idp: 'corp' })]))), []);
  });

  t.test('a client that requires a secret must have one', async (t) => {
    t.same(problemsOf(withChange((c) => delete clients(c)[0]!.clientSecrets)), [
      'clients[0].clientSecrets: must list at least one secret when requireClientSecret is true',
    ]);
  });

  t.test('a private_key_jwt client has public keys, inline or by URI, and no secret', async (t) => {
    // An EC P-256 public key (RFC 7517 Appendix A.1).
    const jwk = {
      kty: 'EC',
      crv: 'P-256',
      x: 'MKBCTNIcKUSDii11ySs3526iDZ8AiTo7Tu6KPAqv7D4',
      y: '4Etl6SRW2YiLUrN5vfvVHuhp7x8PxltmWWlbbM4IFyM',
      kid: '1',
    };
    const keyClient = (extra: Json) => (c: Json) => {
      const client = clients(c)[0]!;
      delete client.clientSecrets;
      Object.assign(client, extra);
    };
    t.same(problemsOf(withChange(keyClient({ jwks: { keys: [jwk] } }))), []);
    t.same(problemsOf(withChange(keyClient({ jwksUri: 'https://client.example/jwks' }))), []);
    t.same(problemsOf(withChange(keyClient({ jwks: { keys: [jwk] }, jwksUri: 'https://client.example/jwks' }))), [
      'clients[0].jwksUri: must not be set together with jwks',
    ]);
    t.same(problemsOf(withChange(keyClient({ jwks: { keys: [jwk] }, clientSecrets: [{ value: secretValue }] }))), [
      'clients[0].clientSecrets: must be empty for a client with jwks or jwksUri (it authenticates with private_key_jwt only)',
    ]);
    t.same(problemsOf(withChange(keyClient({ jwks: { keys: [jwk] }, requireClientSecret: false }))), [
      'clients[0].requireClientSecret: must not be false for a client with jwks or jwksUri (it is a confidential client)',
    ]);
    const privateKey = problemsOf(
      withChange(keyClient({ jwks: { keys: [{ ...jwk, d: '870MB6gfuTJ4HtUnUvYMyJpr5eUZNP4Bk43bVdj3eAE' }] } })),
    );
    t.match(privateKey.join('\n'), /clients\[0\]\.jwks\.keys\[0\]/, 'a private key is refused by path');
    t.match(
      problemsOf(withChange(keyClient({ jwks: { keys: [{ kty: 'oct', k: 'c2VjcmV0' }] } }))).join('\n'),
      /clients\[0\]\.jwks\.keys\[0\]/,
      'a symmetric key too',
    );
    t.match(problemsOf(withChange(keyClient({ jwks: { keys: [{ ...jwk, x: 'AAAA' }] } }))).join('\n'), /not a usable public key/);
  });

  t.test('a public client needs no secret', async (t) => {
    t.same(problemsOf(withChange((c) => delete clients(c)[2]!.clientSecrets)), []);
  });

  t.test('a client with authorization_code needs a redirect URI', async (t) => {
    t.same(problemsOf(withChange((c) => (clients(c)[1]!.redirectUris = []))), [
      'clients[1].redirectUris: must list at least one redirect URI for the authorization_code grant',
    ]);
  });

  t.test('offline_access needs allowOfflineAccess', async (t) => {
    t.same(problemsOf(withChange((c) => (clients(c)[1]!.allowOfflineAccess = false))), [
      'clients[1].allowedScopes[3]: "offline_access" requires allowOfflineAccess: true',
    ]);
  });

  t.test('the sliding refresh lifetime cannot exceed the absolute one', async (t) => {
    const config = withChange((c) => {
      clients(c)[1]!.refreshTokenExpiration = 'sliding';
      clients(c)[1]!.absoluteRefreshTokenLifetime = 3600;
      clients(c)[1]!.slidingRefreshTokenLifetime = 7200;
    });
    t.same(problemsOf(config), ['clients[1].slidingRefreshTokenLifetime: must not exceed absoluteRefreshTokenLifetime (7200 > 3600)']);
  });

  t.test('a short absolute lifetime is accepted with absolute expiration, whatever the unused sliding default', async (t) => {
    const config = withChange((c) => {
      clients(c)[1]!.refreshTokenExpiration = 'absolute';
      clients(c)[1]!.absoluteRefreshTokenLifetime = 600;
    });
    t.same(problemsOf(config), []);
  });

  t.test('a password hash must be an argon2id or scrypt PHC string', async (t) => {
    t.same(problemsOf(withChange((c) => ((c.users as Json[])[0]!.passwordHash = 'alice'))), [
      'users[0].passwordHash: must be an argon2id or scrypt PHC string as printed by "tessera hash-password"',
    ]);
  });
});

t.test('reporting', async (t) => {
  t.test('several schema problems are reported at once', async (t) => {
    const config = withChange((c) => {
      c.listen = { port: -1 };
      clients(c)[0]!.clientId = '';
      clients(c)[1]!.redirectUris = ['nope'];
    });
    t.same(problemsOf(config), [
      'listen.port: must be at least 0',
      'clients[0].clientId: must not be empty',
      'clients[1].redirectUris[0]: must be an absolute URL',
    ]);
  });

  t.test('several cross-reference problems are reported at once', async (t) => {
    const config = withChange((c) => {
      clients(c)[0]!.allowedGrantTypes = ['client_credential'];
      clients(c)[0]!.allowedScopes = ['api9'];
      clients(c)[2]!.clientId = 'web';
    });
    t.same(problemsOf(config), [
      'clients[0].allowedGrantTypes[0]: unknown grant type "client_credential"',
      'clients[0].allowedScopes[0]: unknown scope "api9"',
      'clients[2].clientId: duplicate client id "web" (also clients[1].clientId)',
    ]);
  });

  t.test('bad environment overrides are reported with schema problems', async (t) => {
    t.same(
      problemsOf(
        withChange((c) => delete c.issuer),
        { env: { TESSERA_WORKERS: 'many' } },
      ),
      ['env.TESSERA_WORKERS: must be an integer from 1 to 64 (got "many")', 'issuer: is required'],
    );
  });

  t.test('ConfigError carries the problems and lists them in its message', async (t) => {
    const error = t.throws(() => validateConfig({}, options)) as ConfigError;
    t.ok(error instanceof ConfigError);
    t.equal(error.code, 'ERR_TESSERA_CONFIG');
    t.same(error.problems, [{ path: 'issuer', message: 'is required' }]);
    t.equal(error.message, 'invalid config:\nissuer: is required');
  });

  t.test('formatProblems gives one line per problem', async (t) => {
    t.equal(
      formatProblems([
        { path: 'clients[2].allowedGrantTypes[0]', message: 'unknown grant type "pasword"' },
        { path: '(root)', message: 'must be an object (got array)' },
      ]),
      'clients[2].allowedGrantTypes[0]: unknown grant type "pasword"\n(root): must be an object (got array)',
    );
  });
});

t.test('files and paths', async (t) => {
  t.test('relative key files and validatorsDir resolve against the config file folder', async (t) => {
    const dir = t.testdir({
      conf: {
        'tessera.json': JSON.stringify({ ...baseConfig(), signing: { keys: [{ file: 'keys/a.jwk.json' }, { file: '/abs/b.jwk.json' }] } }),
      },
    });
    const config = await loadConfigFile(join(dir, 'conf/tessera.json'), { env: {} });
    t.equal(config.configDir, join(dir, 'conf'));
    t.equal(config.configPath, join(dir, 'conf/tessera.json'));
    t.same(
      config.signing.keys.map((key) => key.file),
      [join(dir, 'conf/keys/a.jwk.json'), '/abs/b.jwk.json'],
    );
    t.equal(config.validatorsDir, join(dir, 'conf/validators'));
  });

  t.test('validateConfig resolves relative paths against configDir', async (t) => {
    const config = validateConfig({ ...baseConfig(), validatorsDir: '../plugins' }, options);
    t.equal(config.validatorsDir, '/etc/plugins');
    t.equal(config.configDir, '/etc/tessera');
    t.equal(config.configPath, undefined);
  });

  t.test('an unreadable file is a config problem naming the file', async (t) => {
    const dir = t.testdir({});
    const missing = join(dir, 'missing.json');
    const error = (await loadConfigFile(missing, { env: {} }).catch((caught: unknown) => caught)) as ConfigError;
    t.ok(error instanceof ConfigError);
    t.equal(formatProblems(error.problems), `${missing}: cannot read the config file (no such file)`);
    t.equal(error.source, missing);
  });

  t.test('a JSON syntax error names the line and column', async (t) => {
    const dir = t.testdir({ 'bad.json': '{\n  "issuer": "https://a.example",\n  "clients": [,]\n}\n' });
    const file = join(dir, 'bad.json');
    const error = (await loadConfigFile(file, { env: {} }).catch((caught: unknown) => caught)) as ConfigError;
    t.ok(error instanceof ConfigError);
    t.same(error.problems, [{ path: file, message: 'invalid JSON at line 3, column 15: expected a value, found ","' }]);
  });

  t.test('a truncated file is reported at its end', async (t) => {
    const dir = t.testdir({ 'short.json': '{\n  "issuer": "https://a.example"' });
    const error = (await loadConfigFile(join(dir, 'short.json'), { env: {} }).catch((caught: unknown) => caught)) as ConfigError;
    t.equal(
      error.problems[0]!.message,
      'invalid JSON at line 2, column 32: expected "," or "}" after a property value, found the end of the file',
    );
  });

  t.test('a trailing comma is pointed at', async (t) => {
    const dir = t.testdir({ 'comma.json': '{\n  "issuer": "https://a.example",\n}\n' });
    const error = (await loadConfigFile(join(dir, 'comma.json'), { env: {} }).catch((caught: unknown) => caught)) as ConfigError;
    t.equal(error.problems[0]!.message, 'invalid JSON at line 3, column 1: expected a property name in double quotes, found "}"');
  });

  t.test('a byte order mark is ignored', async (t) => {
    const dir = t.testdir({ 'bom.json': `\uFEFF${JSON.stringify(baseConfig())}` });
    t.equal((await loadConfigFile(join(dir, 'bom.json'), { env: {} })).issuer, 'https://auth.example.com');
  });
});

t.test('environment overrides', async (t) => {
  const load = (env: NodeJS.ProcessEnv, change: (c: Json) => void = () => {}): LoadedConfig =>
    validateConfig(withChange(change), { ...options, env });

  t.test('TESSERA_PORT and TESSERA_HOST set the listen address', async (t) => {
    const config = load({ TESSERA_PORT: '8080', TESSERA_HOST: '0.0.0.0' });
    t.same(config.listen, { host: '0.0.0.0', port: 8080 });
    t.same(config.envOverrides, ['TESSERA_PORT', 'TESSERA_HOST']);
  });

  t.test('TESSERA_PORT keeps the host from the file', async (t) => {
    t.same(load({ TESSERA_PORT: '0' }, (c) => (c.listen = { host: '::1' })).listen, { host: '::1', port: 0 });
  });

  t.test('TESSERA_REDIS_URL switches the store to Redis with defaults', async (t) => {
    t.same(load({ TESSERA_REDIS_URL: 'redis://cache:6379/0' }).store, {
      type: 'redis',
      url: 'redis://cache:6379/0',
      keyPrefix: 'tessera:',
      commandTimeoutMs: 500,
    });
  });

  t.test('TESSERA_REDIS_URL keeps the key prefix of a Redis store in the file', async (t) => {
    const config = load({ TESSERA_REDIS_URL: 'rediss://cache:6380' }, (c) => {
      c.store = { type: 'redis-cluster', nodes: ['redis://a:6379'], keyPrefix: 'auth:' };
    });
    t.same(config.store, { type: 'redis', url: 'rediss://cache:6380', keyPrefix: 'auth:', commandTimeoutMs: 500 });
  });

  t.test('TESSERA_WORKERS sets the thread count', async (t) => {
    t.same(load({ TESSERA_WORKERS: '8' }).workers, {
      threads: 8,
      maxQueue: 4096,
      passwordConcurrency: 4,
      passwordMaxQueue: 256,
      passwordShedDelayMs: 1000,
    });
  });

  t.test('TESSERA_LOG_LEVEL sets the log level', async (t) => {
    t.equal(load({ TESSERA_LOG_LEVEL: 'debug' }).logLevel, 'debug');
  });

  t.test('an empty variable counts as unset', async (t) => {
    const config = load({ TESSERA_PORT: '', TESSERA_LOG_LEVEL: '  ' });
    t.equal(config.listen.port, 5000);
    t.equal(config.logLevel, 'info');
    t.same(config.envOverrides, []);
  });

  t.test('a bad TESSERA_PORT is a problem at env.TESSERA_PORT', async (t) => {
    t.same(problemsOf(baseConfig(), { env: { TESSERA_PORT: 'http' } }), [
      'env.TESSERA_PORT: must be an integer from 0 to 65535 (got "http")',
    ]);
    t.same(problemsOf(baseConfig(), { env: { TESSERA_PORT: '65536' } }), [
      'env.TESSERA_PORT: must be an integer from 0 to 65535 (got "65536")',
    ]);
  });

  t.test('bad TESSERA_WORKERS and TESSERA_LOG_LEVEL are reported together', async (t) => {
    t.same(problemsOf(baseConfig(), { env: { TESSERA_WORKERS: '0', TESSERA_LOG_LEVEL: 'verbose' } }), [
      'env.TESSERA_WORKERS: must be an integer from 1 to 64 (got "0")',
      'env.TESSERA_LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent (got "verbose")',
    ]);
  });

  t.test('a bad TESSERA_REDIS_URL is reported without echoing it (it may hold a password)', async (t) => {
    t.same(problemsOf(baseConfig(), { env: { TESSERA_REDIS_URL: 'https://:hunter2@cache' } }), [
      'env.TESSERA_REDIS_URL: must be a redis:// or rediss:// URL',
    ]);
  });
});

t.test('the loaded config is deep-frozen', async (t) => {
  const config = validateConfig(baseConfig(), options);
  t.ok(Object.isFrozen(config));
  t.ok(Object.isFrozen(config.clients));
  t.ok(Object.isFrozen(config.clients[1]!.redirectUris));
  t.ok(Object.isFrozen(config.users[0]!.claims));
  t.throws(() => {
    (config.clients[0] as { clientId: string }).clientId = 'changed';
  }, TypeError);
  t.equal(config.clients[0]!.clientId, 'm2m');
  // zod's defaults are shallow clones; freezing a loaded config must not freeze them for others.
  t.notOk(Object.isFrozen(configSchema.parse(baseConfig()).signing.keys));
});

t.test('signing key files', async (t) => {
  const writeKey = async (dir: string, name: string, jwk: unknown): Promise<void> => {
    await writeFile(join(dir, name), JSON.stringify(jwk));
  };
  const configWithKeys = (dir: string, files: string[], algorithm = 'ES256'): LoadedConfig =>
    validateConfig({ ...baseConfig(), signing: { algorithm, keys: files.map((file) => ({ file })) } }, { configDir: dir, env: {} });

  t.test('generated private keys of signing.algorithm pass', async (t) => {
    const dir = t.testdir({});
    await writeKey(dir, 'es.json', await generateSigningJwk('ES256'));
    await writeKey(dir, 'es2.json', await generateSigningJwk('ES256'));
    t.same(await checkSigningKeyFiles(configWithKeys(dir, ['es.json', 'es2.json'])), []);
  });

  t.test('a published key of another algorithm is refused too, not only the first', async (t) => {
    const dir = t.testdir({});
    await writeKey(dir, 'es.json', await generateSigningJwk('ES256'));
    await writeKey(dir, 'rs.json', await generateSigningJwk('RS256'));
    t.same(await checkSigningKeyFiles(configWithKeys(dir, ['es.json', 'rs.json'])), [
      { path: 'signing.keys[1].file', message: 'the signing key\'s algorithm "RS256" does not match signing.algorithm "ES256"' },
    ]);
  });

  t.test('a missing file, a public key, a non-JSON file and a wrong algorithm are reported', async (t) => {
    const dir = t.testdir({ 'junk.json': 'not json' });
    const { d: _d, ...publicJwk } = await generateSigningJwk('ES256');
    await writeKey(dir, 'public.json', publicJwk);
    await writeKey(dir, 'ed.json', await generateSigningJwk('EdDSA'));
    t.same(await checkSigningKeyFiles(configWithKeys(dir, ['ed.json', 'missing.json', 'public.json', 'junk.json'])), [
      { path: 'signing.keys[0].file', message: 'the signing key\'s algorithm "EdDSA" does not match signing.algorithm "ES256"' },
      { path: 'signing.keys[1].file', message: `cannot read ${JSON.stringify(join(dir, 'missing.json'))} (no such file)` },
      {
        path: 'signing.keys[2].file',
        message: `${JSON.stringify(join(dir, 'public.json'))} holds a public key; a private JWK is needed to sign`,
      },
      {
        path: 'signing.keys[3].file',
        message: `${JSON.stringify(join(dir, 'junk.json'))} is not JSON (expected a private JWK from "tessera keys generate")`,
      },
    ]);
  });
});

t.test('dynamic client registration needs the registry and a policy of known grant types and scopes', async (t) => {
  const enabled = (policy: Json = {}) =>
    withChange((c) => {
      c.clientRegistry = { store: true };
      c.dynamicClientRegistration = { enabled: true, policy };
    });
  t.same(problemsOf(enabled()), []);
  t.same(problemsOf(withChange((c) => (c.dynamicClientRegistration = { enabled: true }))), [
    'dynamicClientRegistration: needs clientRegistry.store: true (registered clients are kept in the store)',
  ]);
  t.same(problemsOf(enabled({ grantTypes: ['pasword'], scopes: ['openid', 'nope'] })), [
    'dynamicClientRegistration.policy.grantTypes[0]: unknown grant type "pasword"',
    'dynamicClientRegistration.policy.scopes[1]: unknown scope "nope"',
  ]);
  const withFile = withChange((c) => {
    c.clientRegistry = { store: true };
    c.dynamicClientRegistration = { enabled: true, initialAccessTokenFile: 'registration.token' };
  });
  t.equal(validateConfig(withFile, options).dynamicClientRegistration.initialAccessTokenFile, '/etc/tessera/registration.token');
});

t.test('admin.tokenScope is one of the API scopes and needs the registry', async (t) => {
  const withScope = (scope: string, store = true) =>
    withChange((c) => {
      c.clientRegistry = { store };
      c.admin = { tokenScope: scope };
    });
  t.same(problemsOf(withScope('api1')), []);
  t.same(problemsOf(withScope('openid')), ['admin.tokenScope: unknown API scope "openid"']);
  t.same(problemsOf(withScope('api1', false)), ['admin: needs clientRegistry.store: true (the admin API keeps its clients in the store)']);
});

import { createHash } from 'node:crypto';
import type { StoreKind } from '../scenarios/scenario.js';
import type { BenchKey } from './keys.js';
import { seedGrantType, seederClient } from './seed.js';

/** The confidential client every token scenario authenticates as (Basic, `m2m:secret`). */
export const benchClient = { clientId: 'm2m', secret: 'secret', scope: 'api1' } as const;

export const sha256Secret = (secret: string): string => createHash('sha256').update(secret, 'utf8').digest('base64');

/**
 * The bench user. Its hash is argon2id at the cost new hashes get (m=19456, t=2, p=1,
 * core/crypto/password_hash.ts), made once with @node-rs/argon2 for password `bench-password`.
 */
export const benchUser = {
  username: 'bench',
  password: 'bench-password',
  subject: 'bench-user-1',
  passwordHash: '$argon2id$v=19$m=19456,t=2,p=1$guPttfCY/XZeTo9k5NU8kA$HTqSuFK28Qw6ixp3nC9V5CgB+2ubXa3dvb+pl8QVgb8',
} as const;

/**
 * A second bench user whose hash is argon2id at the least cost a config accepts (m=1 MiB, t=1,
 * p=1, core/crypto/password_hash.ts; about 0.28 ms of CPU a verify here, ±3% between loops),
 * for the `password_cheap_hash` scenario: what the password grant does besides the hash measured
 * instead of subtracted from a 14 ms verify (bench/README.md, "Bars").
 */
export const cheapHashUser = {
  username: 'bench-cheap',
  password: 'bench-password',
  subject: 'bench-user-cheap',
  passwordHash: '$argon2id$v=19$m=1024,t=1,p=1$uxf8scwBKCvqmdwwrkdDhA$PSaNehvYS+91BWCxvU9lgcf6bKB0JrXxNVB3+Qn13dw',
} as const;

export type BenchUser = typeof benchUser | typeof cheapHashUser;

/** The user clients of the new scenarios, named as in config/demo.json; every secret is `secret`. */
export const benchClients = {
  /** Password and refresh_token grants (rotation: `oneTimeOnly`, the default). */
  ro: { clientId: 'ro.client', secret: 'secret' },
  /** Authorization code with PKCE, confidential (Basic). */
  web: { clientId: 'web', secret: 'secret', redirectUri: 'http://127.0.0.1:5002/callback' },
  /** Device flow, public; polls every second at most. */
  tv: { clientId: 'tv', pollingIntervalS: 1 },
  /** The user-facing client of the delegation and token exchange scenarios (password grant). */
  frontend: { clientId: 'frontend', secret: 'secret' },
  /** Delegation: trades a user's api1 token for an api2 token. */
  api1: { clientId: 'api1', secret: 'secret' },
  /** RFC 8693 token exchange. */
  exchanger: { clientId: 'exchanger', secret: 'secret' },
} as const;

/** The API resource that introspects (Basic `urn:api1:secret`). */
export const introspectingResource = { name: 'urn:api1', secret: 'secret' } as const;

export type BenchClientName = keyof typeof benchClients;

function clientConfig(name: BenchClientName): Record<string, unknown> {
  const secret = (value: string): Record<string, unknown> => ({ clientSecrets: [{ value: sha256Secret(value) }] });
  switch (name) {
    case 'ro':
      return {
        clientId: benchClients.ro.clientId,
        ...secret(benchClients.ro.secret),
        allowedGrantTypes: ['password', 'refresh_token'],
        allowedScopes: ['openid', 'api1', 'offline_access'],
        allowOfflineAccess: true,
      };
    case 'web':
      return {
        clientId: benchClients.web.clientId,
        ...secret(benchClients.web.secret),
        allowedGrantTypes: ['authorization_code', 'refresh_token'],
        redirectUris: [benchClients.web.redirectUri],
        allowedScopes: ['openid', 'api1', 'offline_access'],
        allowOfflineAccess: true,
      };
    case 'tv':
      return {
        clientId: benchClients.tv.clientId,
        requireClientSecret: false,
        allowedGrantTypes: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'],
        allowedScopes: ['openid', 'api1', 'offline_access'],
        allowOfflineAccess: true,
        pollingInterval: benchClients.tv.pollingIntervalS,
      };
    case 'frontend':
      return {
        clientId: benchClients.frontend.clientId,
        ...secret(benchClients.frontend.secret),
        allowedGrantTypes: ['password'],
        allowedScopes: ['openid', 'api1'],
      };
    case 'api1':
      return {
        clientId: benchClients.api1.clientId,
        ...secret(benchClients.api1.secret),
        allowedGrantTypes: ['delegation'],
        allowedScopes: ['api2'],
        audiences: ['urn:api1'],
      };
    case 'exchanger':
      return {
        clientId: benchClients.exchanger.clientId,
        ...secret(benchClients.exchanger.secret),
        allowedGrantTypes: ['urn:ietf:params:oauth:grant-type:token-exchange'],
        allowedScopes: ['api2'],
        audiences: ['urn:api1'],
      };
  }
}

/** Adds bench clients (by name) to a config built by {@link buildBenchConfig}. */
export function addClients(config: Record<string, unknown>, ...names: BenchClientName[]): void {
  (config.clients as Record<string, unknown>[]).push(...names.map(clientConfig));
}

/** Adds the bench user (password grant, and the subject of seeded records). */
export function addBenchUser(config: Record<string, unknown>, user: BenchUser = benchUser): void {
  config.users = [
    ...((config.users as Record<string, unknown>[] | undefined) ?? []),
    { subjectId: user.subject, username: user.username, passwordHash: user.passwordHash, claims: { name: 'Bench User' } },
  ];
}

/** Gives `urn:api1` a secret, so that it can introspect. */
export function addIntrospectionSecret(config: Record<string, unknown>): void {
  for (const resource of config.apiResources as Record<string, unknown>[]) {
    if (resource.name === introspectingResource.name) resource.secrets = [{ value: sha256Secret(introspectingResource.secret) }];
  }
}

export interface BenchConfigOptions {
  port: number;
  store: StoreKind;
  redisUrl?: string;
  /** Keeps gateways that share the bench Redis apart. */
  keyPrefix: string;
  key: BenchKey;
  threads: number;
  /** Adds the client of the bench seed grant (support/seed_grant.mjs). */
  seeding?: boolean;
}

/** The Tessera config of a bench run (docs/configuration.md), before a scenario's `configure` adds to it. */
export function buildBenchConfig(options: BenchConfigOptions): Record<string, unknown> {
  if (options.store === 'redis' && options.redisUrl === undefined) throw new Error('a Redis bench config needs redisUrl');
  return {
    issuer: `http://127.0.0.1:${options.port}`,
    listen: { host: '127.0.0.1', port: options.port },
    // The bench seeds and redeems hundreds of thousands of codes and refresh tokens a minute, each
    // kept until it expires: far past a real deployment's store in minutes, so no cap is hit.
    store:
      options.store === 'redis'
        ? { type: 'redis', url: options.redisUrl, keyPrefix: options.keyPrefix }
        : { type: 'memory', maxRecords: 50_000_000 },
    workers: { threads: options.threads },
    signing: { algorithm: options.key.alg, keys: [{ file: options.key.file }] },
    // Warnings and errors only: a log line per request would be measured too.
    logLevel: 'warn',
    identityResources: [{ name: 'openid', claims: ['sub'] }],
    apiScopes: [{ name: 'api1' }, { name: 'api2' }],
    apiResources: [
      { name: 'urn:api1', scopes: ['api1'] },
      { name: 'urn:api2', scopes: ['api2'] },
    ],
    clients: [
      {
        clientId: benchClient.clientId,
        clientSecrets: [{ value: sha256Secret(benchClient.secret) }],
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['api1', 'api2'],
        accessTokenLifetime: 3600,
      },
      ...(options.seeding === true
        ? [
            {
              clientId: seederClient.clientId,
              clientSecrets: [{ value: sha256Secret(seederClient.secret) }],
              allowedGrantTypes: [seedGrantType],
            },
          ]
        : []),
    ],
  };
}

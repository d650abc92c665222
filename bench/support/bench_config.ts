import { createHash } from 'node:crypto';
import type { StoreKind } from '../scenarios/scenario.js';
import type { BenchKey } from './keys.js';

/** The confidential client every token scenario authenticates as (Basic, `m2m:secret`). */
export const benchClient = { clientId: 'm2m', secret: 'secret', scope: 'api1' } as const;

const sha256Secret = (secret: string): string => createHash('sha256').update(secret, 'utf8').digest('base64');

export interface BenchConfigOptions {
  port: number;
  store: StoreKind;
  redisUrl?: string;
  /** Keeps gateways that share the bench Redis apart. */
  keyPrefix: string;
  key: BenchKey;
  threads: number;
}

/** The Tessera config of a bench run (SPEC §2), before a scenario's `configure` adds to it. */
export function buildBenchConfig(options: BenchConfigOptions): Record<string, unknown> {
  if (options.store === 'redis' && options.redisUrl === undefined) throw new Error('a Redis bench config needs redisUrl');
  return {
    issuer: `http://127.0.0.1:${options.port}`,
    listen: { host: '127.0.0.1', port: options.port },
    store: options.store === 'redis' ? { type: 'redis', url: options.redisUrl, keyPrefix: options.keyPrefix } : { type: 'memory' },
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
    ],
  };
}

import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Test } from 'tap';
import { validateConfig, type LoadedConfig } from '../../gateway/config/load.js';
import { startGateway, type RunningGateway } from '../../gateway/server.js';
import { freePort } from './free_port.js';

export const sha256Secret = (secret: string): string => createHash('sha256').update(secret, 'utf8').digest('base64');

/** The RFC 6749 Appendix B client: both parts need form-encoding before Basic. */
export const appendixB = { clientId: 'an:identifier', secret: 'some secure & non-standard secret' } as const;

/** A small config with one client per authentication case; tests patch it as they need. */
export function baseTestConfig(): Record<string, unknown> {
  return {
    issuer: 'http://127.0.0.1:5000',
    listen: { host: '127.0.0.1', port: 0 },
    store: { type: 'memory' },
    workers: { threads: 1 },
    logLevel: 'silent',
    identityResources: [
      { name: 'openid', claims: ['sub'] },
      { name: 'profile', claims: ['name'] },
    ],
    apiScopes: [{ name: 'api1' }, { name: 'api2' }],
    apiResources: [
      { name: 'urn:api1', scopes: ['api1'] },
      { name: 'urn:api2', scopes: ['api2'] },
    ],
    clients: [
      {
        clientId: 'm2m',
        clientSecrets: [{ value: sha256Secret('secret') }],
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['api1', 'api2'],
        claims: [{ type: 'tier', value: 'gold' }],
        accessTokenLifetime: 600,
      },
      {
        clientId: appendixB.clientId,
        clientSecrets: [{ value: sha256Secret(appendixB.secret) }],
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['api1'],
      },
      {
        clientId: 'rolling',
        clientSecrets: [
          { value: sha256Secret('expired'), expiration: '2020-01-01T00:00:00Z' },
          { value: sha256Secret('current') },
        ],
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['api1'],
      },
      {
        clientId: 'disabled',
        enabled: false,
        clientSecrets: [{ value: sha256Secret('secret') }],
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['api1'],
      },
      {
        clientId: 'public-cc',
        requireClientSecret: false,
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['api2'],
      },
      {
        clientId: 'user-app',
        clientSecrets: [{ value: sha256Secret('secret') }],
        allowedGrantTypes: ['password'],
        allowedScopes: ['openid', 'api1'],
      },
      {
        clientId: 'identity-only',
        clientSecrets: [{ value: sha256Secret('secret') }],
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['openid'],
      },
    ],
  };
}

export interface TestGateway extends RunningGateway {
  readonly config: LoadedConfig;
  /** `${url}/connect/token` */
  readonly tokenUrl: string;
}

/** Starts a real gateway on a free port; stopped when the test ends. */
export async function startTestGateway(
  t: Test,
  options: {
    patch?: (raw: Record<string, unknown>) => void;
    grantModules?: string[];
    extraGrantTypes?: string[];
  } = {},
): Promise<TestGateway> {
  const raw = baseTestConfig();
  // The issuer must be where the gateway listens, for discovery-driven clients.
  const port = await freePort();
  raw.issuer = `http://127.0.0.1:${port}`;
  raw.listen = { host: '127.0.0.1', port };
  options.patch?.(raw);
  // Not t.testdir(): a test may use its own testdir for key files.
  const devKeyDir = mkdtempSync(path.join(tmpdir(), 'tessera-test-'));
  t.teardown(() => rmSync(devKeyDir, { recursive: true, force: true }));
  const config = validateConfig(raw, { configDir: devKeyDir, env: {}, extraGrantTypes: options.extraGrantTypes ?? [] });
  const gateway = await startGateway({ config, devKeyDir, ...(options.grantModules ? { grantModules: options.grantModules } : {}) });
  t.teardown(() => gateway.stop());
  return { ...gateway, stop: () => gateway.stop(), config, tokenUrl: `${gateway.url}/connect/token` };
}

/**
 * The peer: node-oidc-provider in its own process, configured as close to Tessera's hot path as
 * it allows. Plain `node:http` + Koa as its README shows.
 *
 *   node --import tsx bench/peers/oidc_provider_process.ts <mode> <private-jwk-file> <port> [redis-url]
 *
 * Modes (one per peer scenario):
 * - `client_credentials`: `client_secret_basic`, RFC 8707 resource indicators with a default
 *   resource, RFC 9068 JWT access tokens signed ES256 with the same key Tessera uses. JWT-format
 *   access tokens are not written to the adapter, so the in-memory adapter does no work per request.
 * - `refresh_token`: the refresh_token grant with rotation (`rotateRefreshToken: true`: every
 *   refresh consumes the presented token and saves a new one), the same resource indicator and
 *   JWT access tokens. The runner pre-issues refresh tokens by IPC (`ask` with a SeedRequest,
 *   support/seed.ts): this process saves a `Grant` and a `RefreshToken` per token through the
 *   provider's own models, as its authorization_code grant would, and answers their values.
 *   Refresh tokens are opaque and live in the adapter, so this mode needs one that keeps them:
 *   the bundled memory adapter is an LRU of 1,000 entries and would evict pre-issued tokens, so
 *   a plain in-process Map (`MapAdapter`) holds them. A Map costs less per request than Tessera's
 *   Redis round trips, so this choice favours the peer. Given a Redis URL, the peer keeps them in
 *   Redis instead (`redis_adapter.ts`), as a deployment of several instances must: the like-for-
 *   like comparison with Tessera on Redis.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import Provider from 'oidc-provider';
import { announceReady, answerRequests, stopOnRequest } from '../support/child_protocol.js';
import type { SeedRequest, SeededItem } from '../support/seed.js';
import { peerClient } from './peers.js';
import { redisAdapter } from './redis_adapter.js';

type Mode = (jwk: Record<string, unknown>, adapter: AdapterClass) => Record<string, unknown>;
type AdapterClass = new (name: string) => object;

interface Stored {
  payload: Record<string, unknown>;
  /** Epoch ms, or Infinity. */
  expiresAt: number;
}

/**
 * node-oidc-provider's adapter contract over plain Maps: what a production adapter (Redis,
 * MongoDB) does, without the LRU limit of the bundled memory adapter. One instance per model.
 */
class MapAdapter {
  private static readonly records = new Map<string, Stored>();
  private static readonly grants = new Map<string, Set<string>>();
  private static readonly byUid = new Map<string, string>();
  private static readonly byUserCode = new Map<string, string>();

  constructor(private readonly name: string) {}

  private key(id: string): string {
    return `${this.name}:${id}`;
  }

  upsert(id: string, payload: Record<string, unknown>, expiresIn?: number): Promise<void> {
    const key = this.key(id);
    MapAdapter.records.set(key, {
      payload,
      expiresAt: typeof expiresIn === 'number' ? Date.now() + expiresIn * 1000 : Number.POSITIVE_INFINITY,
    });
    if (typeof payload.grantId === 'string') {
      let members = MapAdapter.grants.get(payload.grantId);
      if (members === undefined) MapAdapter.grants.set(payload.grantId, (members = new Set()));
      members.add(key);
    }
    if (typeof payload.uid === 'string') MapAdapter.byUid.set(payload.uid, id);
    if (typeof payload.userCode === 'string') MapAdapter.byUserCode.set(payload.userCode, id);
    return Promise.resolve();
  }

  find(id: string): Promise<Record<string, unknown> | undefined> {
    const key = this.key(id);
    const stored = MapAdapter.records.get(key);
    if (stored === undefined) return Promise.resolve(undefined);
    if (stored.expiresAt <= Date.now()) {
      MapAdapter.records.delete(key);
      return Promise.resolve(undefined);
    }
    return Promise.resolve(stored.payload);
  }

  findByUid(uid: string): Promise<Record<string, unknown> | undefined> {
    const id = MapAdapter.byUid.get(uid);
    return id === undefined ? Promise.resolve(undefined) : this.find(id);
  }

  findByUserCode(userCode: string): Promise<Record<string, unknown> | undefined> {
    const id = MapAdapter.byUserCode.get(userCode);
    return id === undefined ? Promise.resolve(undefined) : this.find(id);
  }

  consume(id: string): Promise<void> {
    const stored = MapAdapter.records.get(this.key(id));
    if (stored !== undefined) stored.payload = { ...stored.payload, consumed: Math.floor(Date.now() / 1000) };
    return Promise.resolve();
  }

  destroy(id: string): Promise<void> {
    MapAdapter.records.delete(this.key(id));
    return Promise.resolve();
  }

  revokeByGrantId(grantId: string): Promise<void> {
    for (const key of MapAdapter.grants.get(grantId) ?? []) MapAdapter.records.delete(key);
    MapAdapter.grants.delete(grantId);
    return Promise.resolve();
  }
}

const resourceIndicators = {
  enabled: true,
  defaultResource: () => peerClient.resource,
  useGrantedResource: () => true,
  getResourceServerInfo: (_ctx: unknown, resource: string) => ({
    audience: resource,
    scope: 'api1 api2',
    accessTokenTTL: 3600,
    accessTokenFormat: 'jwt',
    jwt: { sign: { alg: 'ES256' } },
  }),
};

const modes: Record<string, Mode> = {
  client_credentials: (jwk) => ({
    clients: [
      {
        client_id: peerClient.clientId,
        client_secret: peerClient.secret,
        grant_types: ['client_credentials'],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: 'client_secret_basic',
        // Only an ES256 key is in the keystore; the default (RS256) would make the client invalid.
        id_token_signed_response_alg: 'ES256',
        scope: 'api1 api2',
      },
    ],
    scopes: ['api1', 'api2'],
    jwks: { keys: [jwk] },
    features: {
      clientCredentials: { enabled: true },
      devInteractions: { enabled: false },
      resourceIndicators,
    },
    ttl: { ClientCredentials: 3600 },
    // Keeps start-up quiet: the bench never serves interactive flows.
    cookies: { keys: ['bench-cookie-key-not-secret'] },
  }),
  refresh_token: (jwk, adapter) => ({
    adapter,
    clients: [
      {
        client_id: peerClient.clientId,
        client_secret: peerClient.secret,
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        redirect_uris: ['http://127.0.0.1:5002/callback'],
        token_endpoint_auth_method: 'client_secret_basic',
        id_token_signed_response_alg: 'ES256',
        scope: 'openid offline_access api1 api2',
      },
    ],
    scopes: ['openid', 'offline_access', 'api1', 'api2'],
    jwks: { keys: [jwk] },
    // Every account exists: the pre-issued tokens name their subject.
    findAccount: (_ctx: unknown, sub: string) => ({ accountId: sub, claims: () => ({ sub }) }),
    rotateRefreshToken: true,
    features: {
      devInteractions: { enabled: false },
      resourceIndicators,
    },
    ttl: { AccessToken: 3600, RefreshToken: 3600, Grant: 3600 },
    cookies: { keys: ['bench-cookie-key-not-secret'] },
  }),
};

interface ProviderModels {
  Client: { find(id: string): Promise<unknown> };
  Grant: new (
    fields: Record<string, unknown>,
  ) => {
    addOIDCScope(scope: string): void;
    addResourceScope(resource: string, scope: string): void;
    save(): Promise<string>;
  };
  RefreshToken: new (fields: Record<string, unknown>) => { save(): Promise<string> };
}

/**
 * Refresh tokens as node-oidc-provider's authorization_code grant issues them: a Grant for the
 * client and account (OIDC scope `offline_access`, resource scope `api1` on `urn:api1`) and a
 * RefreshToken bound to it, both saved through the adapter.
 */
async function seedRefreshTokens(models: ProviderModels, request: SeedRequest): Promise<SeededItem[]> {
  if (request.type !== 'refresh_token') throw new Error(`this peer seeds refresh tokens, not ${request.type}`);
  const client = await models.Client.find(peerClient.clientId);
  if (client === undefined) throw new Error(`no client ${peerClient.clientId}`);
  const authTime = Math.floor(Date.now() / 1000);
  const seedOne = async (): Promise<SeededItem> => {
    const grant = new models.Grant({ accountId: request.subject, clientId: peerClient.clientId });
    grant.addOIDCScope('offline_access');
    grant.addResourceScope(peerClient.resource, peerClient.scope);
    const grantId = await grant.save();
    const token = new models.RefreshToken({
      accountId: request.subject,
      client,
      grantId,
      gty: 'authorization_code',
      scope: `offline_access ${peerClient.scope}`,
      resource: peerClient.resource,
      authTime,
      expiresWithSession: false,
    });
    return { refresh_token: await token.save() };
  };
  // In parallel chunks: on the Redis adapter one token is several round trips.
  const items: SeededItem[] = [];
  for (let done = 0; done < request.count; done += seedChunk) {
    const chunk = Math.min(seedChunk, request.count - done);
    items.push(...(await Promise.all(Array.from({ length: chunk }, seedOne))));
  }
  return items;
}

const seedChunk = 256;

const [mode = '', keyFile = '', portArg = '0', redisUrl] = process.argv.slice(2);
const configure = modes[mode];
if (configure === undefined) {
  console.error(`unknown peer mode "${mode}" (known: ${Object.keys(modes).join(', ')})`);
  process.exit(2);
}
const jwk = JSON.parse(readFileSync(keyFile, 'utf8')) as Record<string, unknown>;

const server = http.createServer();
await new Promise<void>((resolve) => server.listen(Number(portArg), '127.0.0.1', resolve));
const address = server.address();
const port = typeof address === 'object' && address !== null ? address.port : 0;
const issuer = `http://127.0.0.1:${port}`;
const adapter = redisUrl === undefined ? MapAdapter : redisAdapter(redisUrl, `bench:peer:${port}:`);
const provider = new Provider(issuer, configure(jwk, adapter));
provider.on('server_error', (_ctx, err) => console.error('oidc-provider server_error', err));
answerRequests(async (request) => seedRefreshTokens(provider as unknown as ProviderModels, request as SeedRequest));
server.on('request', provider.callback());

const version = (createRequire(import.meta.url)('oidc-provider/package.json') as { version: string }).version;
stopOnRequest(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});
announceReady(issuer, { name: 'node-oidc-provider', version, mode, adapter: redisUrl === undefined ? 'map' : 'redis' });

/**
 * The peer: node-oidc-provider in its own process, configured as close to Tessera's hot path as
 * it allows. Plain `node:http` + Koa as its README shows.
 *
 *   node --import tsx bench/peers/oidc_provider_process.ts <mode> <private-jwk-file> <port>
 *
 * Modes (one per peer scenario):
 * - `client_credentials`: `client_secret_basic`, RFC 8707 resource indicators with a default
 *   resource, RFC 9068 JWT access tokens signed ES256 with the same key Tessera uses. JWT-format
 *   access tokens are not written to the adapter, so the in-memory adapter does no work per request.
 * - `refresh_token`: not yet (it lands with Tessera's refresh grant). Add its configuration to
 *   `modes` below and a warm-up that obtains a refresh token; the runner needs nothing else.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import Provider from 'oidc-provider';
import { announceReady, stopOnRequest } from '../support/child_protocol.js';
import { peerClient } from './peers.js';

type Mode = (jwk: Record<string, unknown>) => Record<string, unknown>;

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
      resourceIndicators: {
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
      },
    },
    ttl: { ClientCredentials: 3600 },
    // Keeps start-up quiet: the bench never serves interactive flows.
    cookies: { keys: ['bench-cookie-key-not-secret'] },
  }),
};

const [mode = '', keyFile = '', portArg = '0'] = process.argv.slice(2);
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
const provider = new Provider(issuer, configure(jwk));
provider.on('server_error', (_ctx, err) => console.error('oidc-provider server_error', err));
server.on('request', provider.callback());

const version = (createRequire(import.meta.url)('oidc-provider/package.json') as { version: string }).version;
stopOnRequest(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});
announceReady(issuer, { name: 'node-oidc-provider', version, mode });

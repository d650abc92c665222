/**
 * `client_credentials` with `private_key_jwt` client authentication (RFC 7523 §2.2): every
 * request carries its own ES256 client assertion with a fresh `jti`, made before each run and fed
 * to the load generator from a file (a `once` supply: a replayed assertion is refused).
 */
import { generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { jwtBearerAssertionType } from '../../core/client_assertion.js';
import { benchClient } from '../support/bench_config.js';
import { subjectIs, tokenExpectation, verifyAccessTokenResponse } from './checks.js';
import { formPost, get } from './requests.js';
import { oncePerRequest } from './floor.js';
import type { ActiveScenario, RequestKind, ServerAccess } from './scenario.js';

/** The bench's private_key_jwt client: its own id, the bench client's grant and scope. */
const keyClient = { clientId: 'm2m.pkjwt', kid: 'bench-es256' } as const;
const tokenPath = '/connect/token';
/** Assertions are made just before each run and must outlive it (the gateway allows up to 300 s). */
const assertionLifetimeS = 240;

/** One key pair per bench process: `configure` publishes its public half, the supply signs with the private one. */
let keys: { privateKey: KeyObject; publicKey: KeyObject } | undefined;
function benchKeys(): { privateKey: KeyObject; publicKey: KeyObject } {
  keys ??= generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return keys;
}

/** A compact ES256 JWS, signed as the workers sign tokens (node:crypto, R||S). */
function signAssertion(header: string, claims: object, privateKey: KeyObject): string {
  const input = `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
  const signature = sign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'ieee-p1363' });
  return `${input}.${signature.toString('base64url')}`;
}

function assertionBodies(count: number, audience: string): string[] {
  const { privateKey } = benchKeys();
  const header = Buffer.from(JSON.stringify({ alg: 'ES256', kid: keyClient.kid })).toString('base64url');
  const now = Math.floor(Date.now() / 1000);
  // A compact JWS is base64url and dots only: nothing in it needs form-encoding.
  const prefix = `${new URLSearchParams({
    grant_type: 'client_credentials',
    scope: benchClient.scope,
    client_assertion_type: jwtBearerAssertionType,
  }).toString()}&client_assertion=`;
  // One random draw for every jti of the batch: 16 bytes each.
  const random = randomBytes(16 * count);
  const bodies: string[] = [];
  for (let i = 0; i < count; i++) {
    const claims = {
      iss: keyClient.clientId,
      sub: keyClient.clientId,
      aud: audience,
      iat: now,
      exp: now + assertionLifetimeS,
      jti: random.subarray(16 * i, 16 * i + 16).toString('base64url'),
    };
    bodies.push(prefix + signAssertion(header, claims, privateKey));
  }
  return bodies;
}

async function privateKeyJwtKind(server: ServerAccess): Promise<RequestKind> {
  // RFC 7523 §3: aud names the server; its issuer, as openid-client sends it.
  const discovery = await server.call(get('/.well-known/openid-configuration'));
  const issuer = discovery.issuer as string;
  return {
    name: 'client_credentials_private_key_jwt',
    weight: 1,
    // The body comes from the supply; this one only shows the shape.
    request: formPost(tokenPath, { grant_type: 'client_credentials' }),
    expect: tokenExpectation({ refreshToken: false, idToken: false }),
    verify: verifyAccessTokenResponse('ES256', benchClient.scope, {
      refreshToken: false,
      idToken: false,
      claims: subjectIs(keyClient.clientId),
    }),
    supply: {
      mode: 'once',
      make: (count) => Promise.resolve(assertionBodies(count, issuer)),
    },
  };
}

export const clientCredentialsPrivateKeyJwt: ActiveScenario = {
  kind: 'active',
  name: 'client_credentials_private_key_jwt',
  measures:
    'POST /connect/token, grant_type=client_credentials, private_key_jwt (RFC 7523): each request carries its own ES256 client assertion (fresh jti, inline jwks); the gateway checks its claims, a worker verifies the signature and spends the jti in the store (atomic put-if-absent), then signs one ES256 access token.',
  server: 'tessera',
  stores: ['memory', 'redis'],
  signing: 'ES256',
  expectedRps: 12_000,
  configure(config) {
    const publicJwk = benchKeys().publicKey.export({ format: 'jwk' });
    (config.clients as Record<string, unknown>[]).push({
      clientId: keyClient.clientId,
      jwks: { keys: [{ ...publicJwk, kid: keyClient.kid, alg: 'ES256', use: 'sig' }] },
      allowedGrantTypes: ['client_credentials'],
      allowedScopes: ['api1', 'api2'],
      accessTokenLifetime: 3600,
    });
  },
  workload: async (server) => [await privateKeyJwtKind(server)],
  // One ES256 access token and the client assertion's ES256 signature verified; on Redis its jti
  // spent with a put-if-absent.
  floor: {
    signatures: { ES256: 1 },
    verifications: { ES256: 1 },
    store: oncePerRequest({ op: 'write', family: false, ifAbsent: true, bytes: 8 }),
  },
};

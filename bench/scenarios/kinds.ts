/**
 * The kinds of request of the store-backed scenarios, shared by the single-grant scenarios and
 * `mixed`. Each kind says what it sends, what every answer must look like (which also tells the
 * kinds apart in a mix), and how it gets the tokens or codes it consumes.
 */
import { randomBytes } from 'node:crypto';
import type { Expectation } from '../load/load_generator.js';
import { benchClient, benchClients, benchUser, introspectingResource, type BenchUser } from '../support/bench_config.js';
import type { BenchAlgorithm } from '../support/keys.js';
import type { ClaimValue } from '../../core/validator_api.js';
import { parseJson, subjectIs, tokenExpectation, tokenResponse, verifyAccessTokenResponse } from './checks.js';
import { basicAuthorization, formPost } from './requests.js';
import type { RequestKind, RequestPlan, ServerAccess } from './scenario.js';
import { deviceCodeGrantType } from '../../core/grant_types.js';

const tokenPath = '/connect/token';
const form = (fields: Record<string, string>): string => new URLSearchParams(fields).toString();

/** How long seeded records live: far longer than any run. */
const seededLifetimeS = 3600;

/** The claims a password sign-in gives (workers/grants/password.ts), as seeded records carry them. */
export function userClaims(): Record<string, ClaimValue> {
  return { auth_time: Math.floor(Date.now() / 1000), idp: 'local', amr: ['pwd'] };
}

/** client_credentials as its scenarios send it: m2m, Basic, scope api1, signed with `alg`. */
export function clientCredentialsPlan(alg: BenchAlgorithm = 'ES256'): RequestPlan {
  return {
    request: formPost(
      tokenPath,
      { grant_type: 'client_credentials', scope: benchClient.scope },
      basicAuthorization(benchClient.clientId, benchClient.secret),
    ),
    expect: tokenResponse,
    verify: verifyAccessTokenResponse(alg, benchClient.scope, { refreshToken: false, idToken: false }),
  };
}

/** The same as one kind of a mix, where the expectation also tells the kinds of answer apart. */
export function clientCredentialsKind(weight = 1): RequestKind {
  return {
    name: 'client_credentials',
    weight,
    ...clientCredentialsPlan(),
    expect: tokenExpectation({ refreshToken: false, idToken: false }),
  };
}

/** The scopes of a password sign-in that wants a refresh token. */
export const refreshScopes = ['api1', 'offline_access'] as const;

/**
 * The password grant as its scenarios send it: `ro.client` (Basic) signs the bench user in with
 * the refresh scopes, and receives an access token and a refresh token.
 */
export function passwordPlan(user: BenchUser = benchUser): RequestPlan {
  const scope = refreshScopes.join(' ');
  return {
    request: formPost(
      tokenPath,
      { grant_type: 'password', username: user.username, password: user.password, scope },
      basicAuthorization(benchClients.ro.clientId, benchClients.ro.secret),
    ),
    expect: tokenExpectation({ refreshToken: true, idToken: false }),
    verify: verifyAccessTokenResponse('ES256', scope, {
      refreshToken: true,
      idToken: false,
      claims: subjectIs(user.subject),
    }),
  };
}

/** Who presents the refresh tokens, and where: Tessera's `ro.client`, or a peer's client. */
export interface RefreshTokenParty {
  path: string;
  client: { readonly clientId: string; readonly secret: string };
  subject: string;
  /** The scopes the refresh tokens are seeded with. */
  scopes: readonly string[];
  /** The `scope` of the access token each refresh answers. */
  accessTokenScope: string;
  claims: () => Record<string, ClaimValue>;
}

const tesseraRefresh: RefreshTokenParty = {
  path: tokenPath,
  client: benchClients.ro,
  subject: benchUser.subject,
  scopes: refreshScopes,
  accessTokenScope: refreshScopes.join(' '),
  claims: userClaims,
};

/**
 * A refresh with rotation (`ro.client`, `oneTimeOnly`): each request presents a refresh token that
 * was seeded into the store as the password grant would have stored it, and gets a new one.
 */
export function refreshTokenKind(weight = 1, party: RefreshTokenParty = tesseraRefresh): RequestKind {
  return {
    name: 'refresh_token',
    weight,
    request: formPost(
      party.path,
      { grant_type: 'refresh_token', refresh_token: '' },
      basicAuthorization(party.client.clientId, party.client.secret),
    ),
    expect: tokenExpectation({ refreshToken: true, idToken: false }),
    verify: verifyAccessTokenResponse('ES256', party.accessTokenScope, {
      refreshToken: true,
      idToken: false,
      claims: subjectIs(party.subject),
    }),
    supply: {
      mode: 'once',
      async make(count, server) {
        const items = await server.seed({
          type: 'refresh_token',
          count,
          clientId: party.client.clientId,
          subject: party.subject,
          scopes: party.scopes,
          claims: party.claims(),
          lifetimeS: seededLifetimeS,
        });
        return items.map((item) => form({ grant_type: 'refresh_token', refresh_token: item.refresh_token as string }));
      },
    },
  };
}

/** The scopes a web application's sign-in asks for: an ID token, an API, a refresh token. */
export const codeScopes = ['openid', 'api1', 'offline_access'] as const;

/**
 * Redemption of an authorization code with PKCE (`web`, confidential, Basic): codes seeded into
 * the store as the authorize endpoint writes them, each with its own S256 challenge. Answers an
 * access token, an ID token and a refresh token (whose family the code starts).
 */
export function authorizationCodeKind(weight = 1): RequestKind {
  const scope = codeScopes.join(' ');
  return {
    name: 'authorization_code',
    weight,
    request: formPost(
      tokenPath,
      { grant_type: 'authorization_code', code: '' },
      basicAuthorization(benchClients.web.clientId, benchClients.web.secret),
    ),
    expect: tokenExpectation({ refreshToken: true, idToken: true }),
    verify: verifyAccessTokenResponse('ES256', scope, { refreshToken: true, idToken: true, claims: subjectIs(benchUser.subject) }),
    supply: {
      mode: 'once',
      async make(count, server) {
        const items = await server.seed({
          type: 'authorization_code',
          count,
          clientId: benchClients.web.clientId,
          redirectUri: benchClients.web.redirectUri,
          subject: benchUser.subject,
          scopes: codeScopes,
          claims: userClaims(),
          nonce: randomBytes(12).toString('base64url'),
          sid: randomBytes(16).toString('base64url'),
          lifetimeS: seededLifetimeS,
        });
        return items.map((item) =>
          form({
            grant_type: 'authorization_code',
            code: item.code as string,
            redirect_uri: benchClients.web.redirectUri,
            code_verifier: item.code_verifier as string,
          }),
        );
      },
    },
  };
}

/** The scopes the device codes are seeded with. */
export const deviceScopes = ['openid', 'api1'] as const;

const pendingExpectation: Expectation = { status: 400, bodyPrefix: '{"error":"authorization_pending"' };

/**
 * A device's poll while its user has not approved yet (RFC 8628 §3.5): `tv`, a public client,
 * polling device codes seeded as the device authorization endpoint stores them. The expected
 * answer is 400 `authorization_pending`; `slow_down` (a code polled again within the client's
 * 1 s interval) would void the run. The pool is cycled, sized so that a code comes round again
 * only after several seconds.
 */
export function devicePollKind(poolSize: number, weight = 1): RequestKind {
  return {
    name: 'device_code',
    weight,
    request: formPost(tokenPath, { grant_type: deviceCodeGrantType, device_code: '', client_id: benchClients.tv.clientId }),
    expect: pendingExpectation,
    verify: (status, body) => {
      const json = parseJson(body);
      if (status !== 400 || json?.error !== 'authorization_pending')
        return `expected 400 authorization_pending, got ${status}: ${body.slice(0, 200)}`;
      return null;
    },
    supply: {
      mode: 'cycle',
      size: poolSize,
      async make(count, server) {
        const items = await server.seed({
          type: 'device_code',
          count,
          clientId: benchClients.tv.clientId,
          scopes: deviceScopes,
          lifetimeS: seededLifetimeS,
        });
        return items.map((item) =>
          form({ grant_type: deviceCodeGrantType, device_code: item.device_code as string, client_id: benchClients.tv.clientId }),
        );
      },
    },
  };
}

/** An access token from the server: client_credentials (m2m), or the bench user's via the password grant (frontend). */
export async function obtainAccessToken(server: ServerAccess, who: 'client' | 'user', scope: string): Promise<string> {
  const request =
    who === 'client'
      ? formPost(tokenPath, { grant_type: 'client_credentials', scope }, basicAuthorization(benchClient.clientId, benchClient.secret))
      : formPost(
          tokenPath,
          { grant_type: 'password', username: benchUser.username, password: benchUser.password, scope },
          basicAuthorization(benchClients.frontend.clientId, benchClients.frontend.secret),
        );
  const answer = await server.call(request);
  if (typeof answer.access_token !== 'string') throw new Error(`no access token for the ${who}`);
  return answer.access_token;
}

/**
 * Introspection by an API resource (`urn:api1`, Basic) of a valid access token whose audience it
 * is (a client_credentials token for api1, obtained once): signature, expiry, the store's deny
 * list, then the claims.
 */
export async function introspectionKind(server: ServerAccess, weight = 1): Promise<RequestKind> {
  const token = await obtainAccessToken(server, 'client', 'api1');
  return {
    name: 'introspection',
    weight,
    request: formPost('/connect/introspect', { token }, basicAuthorization(introspectingResource.name, introspectingResource.secret)),
    expect: { status: 200, bodyPrefix: '{"active":true' },
    verify: (status, body) => {
      const json = parseJson(body);
      if (status !== 200 || json === null) return `status ${status}: ${body.slice(0, 200)}`;
      if (json.active !== true) return `active is ${String(json.active)}`;
      if (json.aud !== introspectingResource.name) return `aud ${String(json.aud)}, expected ${introspectingResource.name}`;
      if (json.client_id !== benchClient.clientId) return `client_id ${String(json.client_id)}`;
      return null;
    },
  };
}

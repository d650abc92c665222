/**
 * The scenario contract. One file per scenario in this folder, listed in `index.ts`; a grant that
 * has not landed is a `PendingScenario` until someone writes its requests.
 */
import type { Expectation, LoadRequest } from '../load/load_generator.js';
import type { BenchAlgorithm } from '../support/keys.js';
import type { SeededItem, SeedRequest } from '../support/seed.js';

export type StoreKind = 'memory' | 'redis';

/** The request a load generator repeats, what every response must look like, and a deep check. */
export interface RequestPlan {
  request: LoadRequest;
  expect: Expectation;
  /**
   * Checks one full response before the load starts and after each run (the load generators
   * only check status and text): returns what is wrong, or null.
   */
  verify(status: number, body: string): string | null;
}

/**
 * Bodies for requests that cannot be replayed: one refresh token or code per request (`once`),
 * or a pool of pending device codes polled in turn (`cycle`).
 */
export interface Supply {
  mode: 'once' | 'cycle';
  /** `cycle`: how many distinct bodies [the runner's default]. */
  size?: number;
  /** Makes `count` request bodies (form-encoded), usually by seeding the server's store. */
  make(count: number, server: ServerAccess): Promise<string[]>;
}

/** One kind of request in a workload: a fixed request, or one whose body comes from a supply. */
export interface RequestKind extends RequestPlan {
  /** Letters, digits and `_` (the report and the wrk script use it). */
  name: string;
  /** Relative share of the requests (a mix picks per request). */
  weight: number;
  supply?: Supply;
}

/** What a scenario can do with a contender it prepares. */
export interface ServerAccess {
  readonly url: string;
  /** Sends one request and returns the JSON object answered; throws unless the status is 200. */
  call(request: LoadRequest): Promise<Record<string, unknown>>;
  /** Writes records straight into the server's store (support/seed.ts). */
  seed(request: SeedRequest): Promise<SeededItem[]>;
}

/** A server that is not Tessera, measured back to back with it under the same load. */
export interface PeerDefinition {
  /** Row label, e.g. "node-oidc-provider". */
  name: string;
  /** The `mode` argument of `peers/oidc_provider_process.ts`. */
  mode: 'client_credentials' | 'refresh_token';
  signing: BenchAlgorithm;
  /** One fixed request, or a workload built once the peer runs. */
  plan?: RequestPlan;
  workload?: (server: ServerAccess) => Promise<RequestKind[]>;
  /** A guess of its req/s, to size the first supply [2,000]. */
  expectedRps?: number;
  /**
   * Where its adapter keeps what it issues, when the scenario's requests need it: `memory` (a Map
   * in its own heap) or `redis` (the bench's redis-server, whose CPU is then counted as for Tessera).
   */
  store?: StoreKind;
}

/** Context for {@link ActiveScenario.configure}. */
export interface ConfigureContext {
  /** The checkout whose gateway runs (for `validatorsDir`). */
  gatewayRoot: string;
}

export interface ActiveScenario {
  kind: 'active';
  name: string;
  /** One sentence: what the figure tells you (README and report). */
  measures: string;
  /** `tessera`, or `ceiling` for the trivial uWS endpoint (bench/ceiling_process.ts). */
  server: 'tessera' | 'ceiling';
  /** Stores Tessera is measured on, each as its own contender; `[]` when no request touches a store. */
  stores: readonly StoreKind[];
  /** Tessera's signing algorithm [ES256]. */
  signing?: BenchAlgorithm;
  /** Adds what the scenario needs (clients, users) to the bench config (support/bench_config.ts). */
  configure?: (config: Record<string, unknown>, context: ConfigureContext) => void;
  /** One fixed request, replayed. */
  plan?: RequestPlan;
  /**
   * Or: the kinds of request, built once the server runs (obtaining the tokens they carry) and fed
   * from supplies. The gateway then loads the bench seed grant (support/seed_grant.mjs).
   */
  workload?: (server: ServerAccess) => Promise<RequestKind[]>;
  /**
   * A guess of Tessera's req/s (a little above what it reaches), to size the first warm-up's
   * single-use items and floor the first measured run's [20,000]. Only scenarios that consume
   * items need it.
   */
  expectedRps?: number;
  /** Figures measured before the scenario that belong beside its table (e.g. a hash's cost). */
  notes?: () => Promise<string[]>;
  peers?: readonly PeerDefinition[];
}

export interface PendingScenario {
  kind: 'pending';
  name: string;
  measures: string;
  /** Shown as `pending: <reason>`, e.g. "the password grant has not landed". */
  pending: string;
}

export type Scenario = ActiveScenario | PendingScenario;

/** RFC 6749 §2.3.1: id and secret are form-urlencoded before Base64. */
export function basicAuthorization(clientId: string, secret: string): string {
  const encode = (value: string): string => encodeURIComponent(value).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${encode(clientId)}:${encode(secret)}`).toString('base64')}`;
}

export function formPost(path: string, form: Record<string, string>, authorization?: string): LoadRequest {
  return {
    method: 'POST',
    path,
    headers: {
      'Content-Type': 'application/x-www-form-urlencoded',
      ...(authorization === undefined ? {} : { Authorization: authorization }),
    },
    body: new URLSearchParams(form).toString(),
  };
}

export function get(path: string): LoadRequest {
  return { method: 'GET', path, headers: {} };
}

/** The expectation every successful token response meets. */
export const tokenResponse: Expectation = { status: 200, bodyPrefix: '{"access_token":"' };

/**
 * What a token response must contain besides the access token: `true` a member must be there,
 * `false` it must not. In a mix this is also what tells the kinds of answer apart.
 */
export interface TokenMembers {
  refreshToken?: boolean;
  idToken?: boolean;
  /** Further text the body must contain, e.g. `"issued_token_type":"…"`. */
  contains?: readonly string[];
}

export function tokenExpectation(members: TokenMembers): Expectation {
  const contains: string[] = [...(members.contains ?? [])];
  const lacks: string[] = [];
  if (members.refreshToken !== undefined) (members.refreshToken ? contains : lacks).push('"refresh_token":"');
  if (members.idToken !== undefined) (members.idToken ? contains : lacks).push('"id_token":"');
  return { ...tokenResponse, ...(contains.length > 0 ? { contains } : {}), ...(lacks.length > 0 ? { lacks } : {}) };
}

export function parseJson(body: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(body);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** The header and payload of a compact JWS, or null. */
export function decodeJwt(token: string): { header: Record<string, unknown>; payload: Record<string, unknown> } | null {
  const [header, payload, signature] = token.split('.');
  if (header === undefined || payload === undefined || signature === undefined) return null;
  const h = parseJson(Buffer.from(header, 'base64url').toString('utf8'));
  const p = parseJson(Buffer.from(payload, 'base64url').toString('utf8'));
  return h === null || p === null ? null : { header: h, payload: p };
}

export interface AccessTokenChecks extends TokenMembers {
  /** More checks of the access token's payload: returns what is wrong, or null. */
  claims?: (payload: Record<string, unknown>) => string | null;
}

/** An access-token claims check: the JWT's `sub` is `subject`. */
export const subjectIs = (subject: string) => (payload: Record<string, unknown>): string | null =>
  payload.sub === subject ? null : `JWT sub ${String(payload.sub)}, expected ${subject}`;

/**
 * A 200 token response (RFC 6749 §5.1) whose access token is an RFC 9068 JWT signed with `alg`
 * and carrying `scope`; with `checks`, also the refresh and ID tokens and more claims.
 */
export function verifyAccessTokenResponse(alg: BenchAlgorithm, scope: string, checks: AccessTokenChecks = {}) {
  return (status: number, body: string): string | null => {
    if (status !== 200) return `status ${status}: ${body.slice(0, 200)}`;
    const json = parseJson(body);
    if (json === null) return `not a JSON object: ${body.slice(0, 200)}`;
    if (typeof json.access_token !== 'string') return 'no access_token';
    if (typeof json.token_type !== 'string' || json.token_type.toLowerCase() !== 'bearer') return `token_type ${String(json.token_type)}`;
    const jwt = decodeJwt(json.access_token);
    if (jwt === null) return 'access_token is not a compact JWS';
    if (jwt.header.alg !== alg) return `JWT alg ${String(jwt.header.alg)}, expected ${alg}`;
    if (jwt.header.typ !== 'at+jwt') return `JWT typ ${String(jwt.header.typ)}, expected at+jwt`;
    if (jwt.payload.scope !== scope) return `JWT scope ${String(jwt.payload.scope)}, expected ${scope}`;
    const more = checks.claims?.(jwt.payload) ?? null;
    if (more !== null) return more;
    if (checks.refreshToken === true && (typeof json.refresh_token !== 'string' || json.refresh_token.length < 32)) return 'no refresh_token';
    if (checks.refreshToken === false && 'refresh_token' in json) return 'an unexpected refresh_token';
    if (checks.idToken === true) {
      if (typeof json.id_token !== 'string') return 'no id_token';
      const id = decodeJwt(json.id_token);
      if (id === null || id.header.alg !== alg) return `id_token is not a JWS signed ${alg}`;
    }
    if (checks.idToken === false && 'id_token' in json) return 'an unexpected id_token';
    for (const text of checks.contains ?? []) if (!body.includes(text)) return `the body lacks ${text}`;
    return null;
  };
}

/** A 200 JSON object with `member`. */
export function verifyJsonMember(member: string) {
  return (status: number, body: string): string | null => {
    if (status !== 200) return `status ${status}: ${body.slice(0, 200)}`;
    const json = parseJson(body);
    if (json === null) return `not a JSON object: ${body.slice(0, 200)}`;
    return member in json ? null : `no "${member}" member`;
  };
}

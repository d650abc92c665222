/**
 * The scenario contract. One file per scenario in this folder, listed in `index.ts`; a grant that
 * has not landed is a `PendingScenario` until someone writes its requests.
 */
import type { Expectation, LoadRequest } from '../load/load_generator.js';
import type { BenchAlgorithm } from '../support/keys.js';

export type StoreKind = 'memory' | 'redis';

/** The request a load generator repeats, what every response must look like, and a deep check. */
export interface RequestPlan {
  request: LoadRequest;
  expect: Expectation;
  /**
   * Checks one full response before the load starts (the load generators only check status and
   * a prefix): returns what is wrong, or null.
   */
  verify(status: number, body: string): string | null;
}

/** A server that is not Tessera, measured back to back with it under the same load. */
export interface PeerDefinition {
  /** Row label, e.g. "node-oidc-provider". */
  name: string;
  /** The `mode` argument of `peers/oidc_provider_process.ts`. */
  mode: 'client_credentials' | 'refresh_token';
  signing: BenchAlgorithm;
  plan: RequestPlan;
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
  configure?: (config: Record<string, unknown>) => void;
  plan: RequestPlan;
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

function parseJson(body: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(body);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/**
 * A 200 token response (RFC 6749 §5.1) whose access token is an RFC 9068 JWT signed with `alg`
 * and carrying `scope`.
 */
export function verifyAccessTokenResponse(alg: BenchAlgorithm, scope: string) {
  return (status: number, body: string): string | null => {
    if (status !== 200) return `status ${status}: ${body.slice(0, 200)}`;
    const json = parseJson(body);
    if (json === null) return `not a JSON object: ${body.slice(0, 200)}`;
    if (typeof json.access_token !== 'string') return 'no access_token';
    if (typeof json.token_type !== 'string' || json.token_type.toLowerCase() !== 'bearer') return `token_type ${String(json.token_type)}`;
    const [header, payload, signature] = json.access_token.split('.');
    if (header === undefined || payload === undefined || signature === undefined) return 'access_token is not a compact JWS';
    const h = parseJson(Buffer.from(header, 'base64url').toString('utf8'));
    const p = parseJson(Buffer.from(payload, 'base64url').toString('utf8'));
    if (h?.alg !== alg) return `JWT alg ${String(h?.alg)}, expected ${alg}`;
    if (h.typ !== 'at+jwt') return `JWT typ ${String(h.typ)}, expected at+jwt`;
    if (p?.scope !== scope) return `JWT scope ${String(p?.scope)}, expected ${scope}`;
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

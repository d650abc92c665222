/**
 * What crosses the thread boundary: the token endpoint's requests, and the other endpoints' and
 * pages' work that needs a worker (the store, argon2, validators). Requests are batched: the
 * gateway packs every request that arrived in one event-loop turn into one task, because the cost
 * per message (wake-up, copy) dominates the cost of signing one token.
 *
 * A task is an array of {@link TaskItem}s, one per request, answered by an array of
 * {@link TokenTaskResult}s in the same order.
 */
import { Packr } from 'msgpackr';
import type { ClientAssertionCheck } from '../core/client_assertion.js';
import type { RequestObjectCheck } from '../core/request_object.js';
import type { ErrorCode } from '../core/oauth_errors.js';
import type { ClientConfig } from '../core/worker_config.js';
import type { TaskFacts } from './task_facts.js';

/** Parsed `application/x-www-form-urlencoded` parameters; a null-prototype record. */
export type FormParams = Record<string, string>;

/** A token request (RFC 6749 §3.2) whose client is authenticated and allowed `grantType`. */
export interface TokenItem {
  readonly kind: 'token';
  readonly grantType: string;
  readonly clientId: string;
  readonly params: FormParams;
  /** The caller's address, for the security events of a password check; only the password grant carries it. */
  readonly address?: string;
  /** `private_key_jwt`: verified by the worker before the grant runs (core/client_assertion.ts). */
  readonly clientAssertion?: ClientAssertionCheck;
  /** The `DPoP` header's proof (RFC 9449 §5), when the request carries one; the worker verifies it first. */
  readonly dpop?: string;
  /**
   * RFC 8705 §3.1: the `x5t#S256` of the request's TLS client certificate, for a client whose tokens
   * are bound to it (`tlsClientCertificateBoundAccessTokens`).
   */
  readonly x5t?: string;
  /**
   * The client's config, without secrets, when the client is kept in the store (the client
   * registry): the worker has only the config file's clients from its boot data
   * (docs/architecture.md, "Clients in the store").
   */
  readonly client?: ClientConfig;
}

/** An introspection request (RFC 7662 §2.1) from an API resource or a confidential client. */
export interface IntrospectionItem {
  readonly kind: 'introspection';
  readonly caller: 'client' | 'resource';
  /** The client id or the API resource's name. */
  readonly callerId: string;
  readonly params: FormParams;
  /** `private_key_jwt`: verified by the worker first. */
  readonly clientAssertion?: ClientAssertionCheck;
}

/** A revocation request (RFC 7009 §2.1) from an authenticated client. */
export interface RevocationItem {
  readonly kind: 'revocation';
  readonly clientId: string;
  readonly params: FormParams;
  /** `private_key_jwt`: verified by the worker first. */
  readonly clientAssertion?: ClientAssertionCheck;
  /** The `DPoP` header's proof, when the request carries one: needed to revoke a bound refresh token. */
  readonly dpop?: string;
  /**
   * The `x5t#S256` of the request's TLS client certificate, when it has one: needed to revoke a
   * certificate-bound refresh token (RFC 8705 §4).
   */
  readonly x5t?: string;
  /**
   * The client's config, without secrets, when the client is kept in the store (the client
   * registry): the worker has only the config file's clients from its boot data
   * (docs/architecture.md, "Clients in the store").
   */
  readonly client?: ClientConfig;
}

/**
 * A `private_key_jwt` assertion to verify on its own, for an endpoint whose work runs on the
 * gateway (device authorization): answered `[200, '', null]` or 401 `invalid_client`.
 */
export interface ClientAssertionItem {
  readonly kind: 'client_assertion';
  readonly clientId: string;
  /** Always empty: every item has parameters. */
  readonly params: FormParams;
  readonly clientAssertion: ClientAssertionCheck;
}

/**
 * The signature checks of an authorization request whose work runs on the gateway: the pushed
 * authorization request endpoint (RFC 9126: the client's assertion, a DPoP proof, a request
 * object) and a request object at the authorization endpoint (RFC 9101). Answered `[200,
 * '{"jkt":"…"}']` with the DPoP proof's key thumbprint (`{}` without a proof), or the error of the
 * first check that fails.
 */
export interface AuthorizationRequestItem {
  readonly kind: 'authorization_request';
  readonly clientId: string;
  /** Always empty: every item has parameters. */
  readonly params: FormParams;
  /** `private_key_jwt` at the pushed authorization request endpoint: verified first. */
  readonly clientAssertion?: ClientAssertionCheck;
  /** The `DPoP` header's proof at the pushed authorization request endpoint (RFC 9449 §10). */
  readonly dpop?: string;
  /** A request object whose claims the gateway checked (core/request_object.ts). */
  readonly requestObject?: RequestObjectCheck;
  /**
   * The client's config, without secrets, when the client is kept in the store (the client
   * registry): the worker has only the config file's clients from its boot data
   * (docs/architecture.md, "Clients in the store").
   */
  readonly client?: ClientConfig;
}

/** A sign-in on the login pages: `params` carries username, password, scope and acr_values. */
export interface LoginItem {
  readonly kind: 'login';
  readonly clientId: string;
  readonly params: FormParams;
  /** The browser's address, for the security events of the sign-in. */
  readonly address?: string;
  /**
   * The client's config, without secrets, when the client is kept in the store (the client
   * registry): the worker has only the config file's clients from its boot data
   * (docs/architecture.md, "Clients in the store").
   */
  readonly client?: ClientConfig;
}

/**
 * A UserInfo request (OIDC Core §5.3): `params.access_token` is the access token, which the gateway
 * read from the `Authorization` header or the form (RFC 6750 §2.1, §2.2, RFC 9449 §7.1).
 */
export interface UserInfoItem {
  readonly kind: 'userinfo';
  readonly params: FormParams;
  /**
   * Present when the token came as `Authorization: DPoP` (RFC 9449 §7.1): the `DPoP` header's
   * proof ('' when there was none) and the request's method.
   */
  readonly dpop?: { readonly proof: string; readonly htm: 'GET' | 'POST' };
  /** The `x5t#S256` of the request's TLS client certificate, when it has one (RFC 8705 §3). */
  readonly x5t?: string;
}

/**
 * A bearer token presented to the admin API (docs/operations.md, "Admin API", `admin.tokenScope`):
 * a worker checks it as one of this issuer's access tokens, as UserInfo does (signatures are
 * checked on the workers only, docs/architecture.md), and answers `200 {"scope", "client_id"}` or
 * `401 invalid_token`.
 */
export interface AccessTokenItem {
  readonly kind: 'access_token';
  /** `token`: the token, as introspection names it. */
  readonly params: FormParams;
}

/**
 * One request of a task. Plain objects to the code on both sides; each crosses the thread boundary
 * as its JSON text ({@link packTaskItems}). `params` never contains `client_secret`.
 */
export type TaskItem =
  | TokenItem
  | IntrospectionItem
  | RevocationItem
  | LoginItem
  | UserInfoItem
  | AccessTokenItem
  | ClientAssertionItem
  | AuthorizationRequestItem;

/**
 * `[status, jsonBody, retryAfterSeconds, error, facts?]`. `error` is the body's OAuth error code,
 * set where the error was made (`null` on success): the gateway's metrics, log lines, traces and
 * events read it here, never from the body, whose members an extension grant may add to. `facts`
 * is what the request's audit events need (wire/task_facts.ts); present only when the
 * worker recorded some (events on, or a store failure).
 */
export type TokenTaskResult = [status: number, body: string, retryAfter: number | null, error: ErrorCode | null, facts?: TaskFacts];

/** A successful answer: no retry, no error. */
export function successResult(body: string): TokenTaskResult {
  return [200, body, null, null];
}

/** An error answer: a catalogue entry's, or a thrown `OAuthError`'s (whose body may carry extra members). */
export function errorResult(
  error: { readonly status: number; readonly body: string; readonly error: ErrorCode },
  retryAfter: number | null = null,
): TokenTaskResult {
  return [error.status, error.body, retryAfter, error.error];
}

// Plain maps and arrays, no record extensions: batches are decoded by another thread.
const packr = new Packr({ useRecords: false, moreTypes: false });

/**
 * Packs into an exactly-sized copy. msgpackr's output is a view into a reused buffer, and structured
 * clone would copy (or transfer) the whole underlying buffer, not just the view.
 */
export function packMessage(value: unknown): Uint8Array {
  // Not `.slice()`: on a Buffer that is a view, and transferring it would detach msgpackr's
  // reused buffer (or Node's shared Buffer pool) under every later caller.
  return new Uint8Array(packr.pack(value));
}

export function unpackMessage<T>(bytes: Uint8Array): T {
  return packr.unpack(bytes) as T;
}

/**
 * A batch of task items: each item as its JSON text, the batch as msgpack. Packed on the uWS
 * thread, where msgpackr's JavaScript string loop cost 8-12% of the thread's CPU on a
 * client_credentials request: the form's strings come in several of V8's string representations
 * (sliced, internalized, thin), and its property loads turned generic (perf,
 * docs/decisions/0020-uws-thread-per-request-cuts.md). V8's JSON is native and reads every representation alike.
 * Members that are `undefined` are left out, as they were in msgpack.
 */
export function packTaskItems(items: readonly TaskItem[]): Uint8Array {
  const rows: string[] = new Array(items.length);
  for (let i = 0; i < items.length; i++) rows[i] = JSON.stringify(items[i]);
  return packMessage(rows);
}

/** The items {@link packTaskItems} packed; every `params` is a null-prototype record again. */
export function unpackTaskItems(bytes: Uint8Array): TaskItem[] {
  const rows = unpackMessage<string[]>(bytes);
  const items: TaskItem[] = new Array(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const item = JSON.parse(rows[i] as string) as { params: FormParams };
    // JSON.parse makes a parameter named `__proto__` an own member, never the prototype.
    Object.setPrototypeOf(item.params, null);
    items[i] = item as unknown as TaskItem;
  }
  return items;
}

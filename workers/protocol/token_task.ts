/**
 * What crosses the thread boundary for the token endpoint. Requests are batched: the gateway
 * packs every token request that arrived in one event-loop turn into one task, because the cost
 * per message (wake-up, copy) dominates the cost of signing one token.
 *
 * Items and results are tuples, not objects, to keep the packed form small.
 */
import { Packr } from 'msgpackr';

/** Parsed `application/x-www-form-urlencoded` parameters; a null-prototype record. */
export type FormParams = Record<string, string>;

/** Which endpoint an item belongs to. */
export const Endpoint = {
  Token: 0,
  Introspection: 1,
  Revocation: 2,
  /** A sign-in on the login pages: `name` is unused, `params` carries username, password, acr_values, scope. */
  Login: 3,
} as const;
export type Endpoint = (typeof Endpoint)[keyof typeof Endpoint];

/**
 * `[endpoint, name, callerId, params]`: for the token endpoint `name` is the grant type and the
 * caller a client; for introspection `name` says whether the caller is a `client` or an API
 * `resource`. `params` never contains `client_secret`.
 */
export type TokenTaskItem = [endpoint: Endpoint, name: string, callerId: string, params: FormParams];

/** `[status, jsonBody, retryAfterSeconds]`. */
export type TokenTaskResult = [status: number, body: string, retryAfter: number | null];

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

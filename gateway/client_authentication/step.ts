import type { ClientAssertionCheck } from '../../core/client_assertion.js';
import type { RegisteredClient } from '../../core/client_model.js';
import { OAuthErrors } from '../../core/oauth_errors.js';
import type { FormParams, TokenTaskResult } from '../../wire/token_task.js';
import type { Exchange } from '../http/exchange.js';
import type { FormRequest } from '../http/form_request.js';
import { deliver, type Sink } from '../dispatch/worker_dispatcher.js';
import type { ClientAuthenticator, ClientLookup } from './authenticator.js';
import { CallerGate } from './caller_gate.js';
import type { ReadAssertion } from './client_assertion.js';
import type { ClientKeys } from './client_keys.js';
import type { ClientAuthThrottle, PendingAttempt } from '../../core/throttles.js';
import type { ClientDirectory } from '../client_registry/client_directory.js';
import { LookupCapError } from '../client_registry/client_registry.js';
import { isStoreUnavailable } from '../../core/store/store.js';

/** What client authentication is built from, at start. */
export interface ClientAuthenticationDeps {
  issuer: string;
  authenticator: ClientAuthenticator;
  throttle: ClientAuthThrottle;
  /** `private_key_jwt` clients' keys; without it, no client has any. */
  clientKeys?: ClientKeys | undefined;
  /** With a client registry: the clients the authenticator sees, for a store lookup first. */
  directory?: ClientDirectory | undefined;
}

/** Client authentication as an endpoint holds it, built once per endpoint at start. */
export interface ClientAuthentication {
  readonly authenticator: ClientAuthenticator;
  readonly gate: CallerGate;
  readonly clientKeys: ClientKeys | undefined;
  readonly directory: ClientDirectory | undefined;
}

/** A client that passed the gateway's share of authentication. */
export interface AuthenticatedClient {
  readonly client: RegisteredClient;
  /**
   * `private_key_jwt`: the worker that runs the request verifies this first and answers
   * `invalid_client` when it fails (docs/architecture.md, "Client assertions"). The task item
   * carries it; a request without a worker step sends it on its own (`client_assertion` item).
   */
  readonly assertion: ClientAssertionCheck | undefined;
  /** Where the worker's answer goes: the exchange, or, with an assertion, through the failure count first. */
  readonly sink: Sink;
  /**
   * `private_key_jwt`: the assertion's place under the failure limit, taken before the worker
   * checks it. The sink settles it; a step that verifies the assertion and answers on its own
   * (device authorization) settles it with {@link settleAssertion}.
   */
  readonly attempt: PendingAttempt | undefined;
}

export function createClientAuthentication(deps: ClientAuthenticationDeps): ClientAuthentication {
  return {
    authenticator: deps.authenticator,
    gate: new CallerGate(deps.throttle, deps.issuer),
    clientKeys: deps.clientKeys,
    directory: deps.directory,
  };
}

/**
 * The client authentication step of every endpoint that needs it (RFC 6749 §2.3, §3.2.1): one
 * method only, throttled per client, 401 with a Basic challenge when the Authorization header
 * was used (RFC 6749 §5.2), 400 without one when that header is malformed Basic. Answers the
 * request itself when authentication fails; otherwise calls `next`, synchronously for secrets
 * and inline keys, after a fetch for a `jwksUri` whose keys are not cached.
 */
/** An endpoint's step after client authentication: a named function built once, not a closure per request. */
export type AuthenticatedStep<R> = (route: R, request: FormRequest, caller: AuthenticatedClient) => void;

export function authenticateClient<R>(
  authentication: ClientAuthentication,
  route: R,
  request: FormRequest,
  next: AuthenticatedStep<R>,
  /** Right after a store lookup: the clients with the one it found (see {@link lookUpStoredClient}). */
  lookedUp?: ClientLookup,
): void {
  const { exchange, params, authorization } = request;
  const { authenticator, gate, directory } = authentication;
  if (directory?.registry !== undefined) {
    // A remembered Basic header names its client without decoding it again.
    const claimed = authenticator.rememberedClientId(authorization) ?? authenticator.claimedClientId(authorization, params);
    const toLookUp = directory.toLookUp(claimed);
    if (toLookUp !== undefined) {
      lookUpStoredClient(authentication, directory.registry, toLookUp, route, request, next);
      return;
    }
  }
  const auth = authenticator.authenticate(authorization, params, exchange, lookedUp);
  const clientId = auth.ok ? auth.client.clientId : auth.clientId;
  // For the request's log line, metrics and audit events (gateway/observability/endpoint_outcomes.ts).
  exchange.clientId = clientId;
  if (gate.refuseBlocked(exchange, clientId)) {
    exchange.authFailure = 'blocked';
    return;
  }
  if (auth.ok) {
    if (auth.assertion === undefined)
      next(route, request, { client: auth.client, assertion: undefined, sink: exchange, attempt: undefined });
    else admitAssertion(authentication, route, request, auth.client, auth.assertion, next);
    return;
  }
  if (auth.failure === 'multiple_methods') {
    exchange.authFailure = 'multiple_methods';
    gate.refuseMultipleMethods(exchange, auth.clientId);
  } else if (auth.failure === 'malformed_basic') {
    exchange.authFailure = 'malformed';
    gate.refuseMalformed(exchange);
  } else {
    exchange.authFailure = 'failed';
    gate.refuseFailed(exchange, auth.clientId, auth.usedAuthorizationHeader, auth.reason);
  }
}

/**
 * A client id that is neither the config file's nor cached: one store read (shared with
 * concurrent requests for the same id), then authentication as for any client, the registry's
 * cache now holding the client or the id as unknown (docs/architecture.md, "Clients in the
 * store"). A store that cannot answer: `503` with `Retry-After`, never a guess either way.
 */
function lookUpStoredClient<R>(
  authentication: ClientAuthentication,
  registry: NonNullable<ClientDirectory['registry']>,
  clientId: string,
  route: R,
  request: FormRequest,
  next: AuthenticatedStep<R>,
): void {
  const { exchange } = request;
  registry.lookup(clientId).then(
    (found) => {
      if (exchange.aborted) return;
      // Authenticated against what the lookup found, not against the cache: a change anywhere
      // empties every gateway's cache (the version key), and one that came while this lookup ran
      // left the cache without the client, so a valid client failed as unknown (401
      // invalid_client) whenever any client changed during its lookup. The lookup's answer is as
      // fresh as a cached one: the request is served as of just before the change, as a request
      // that found the client cached a moment earlier is.
      const directory = authentication.directory;
      const lookedUp: ClientLookup = { get: (id) => (id === clientId ? found : directory?.get(id)) };
      authenticateWithout(authentication, route, request, next, lookedUp);
    },
    (err: unknown) => {
      if (exchange.aborted) return;
      exchange.clientId = clientId;
      // A store that failed goes to the store outage log (one warning per outage, as for the
      // workers' store failures); without this a Redis outage that only client lookups met was
      // logged nowhere. The cap logs its own warning (ClientRegistry.lookup).
      if (isStoreUnavailable(err) && !(err instanceof LookupCapError)) exchange.facts = { storeUnavailable: true };
      exchange.sendError(OAuthErrors.temporarilyUnavailable, { retryAfter: 2 });
    },
  );
}

/** {@link authenticateClient} without a store lookup: after one. */
function authenticateWithout<R>(
  authentication: ClientAuthentication,
  route: R,
  request: FormRequest,
  next: AuthenticatedStep<R>,
  lookedUp: ClientLookup,
): void {
  authenticateClient({ ...authentication, directory: undefined }, route, request, next, lookedUp);
}

/**
 * Counts the assertion against the client's failure limit before anything checks its signature
 * (docs/security.md, "Throttles"): of a parallel burst of bad assertions at most the limit is
 * verified, and the rest wait or get 429.
 */
function admitAssertion<R>(
  authentication: ClientAuthentication,
  route: R,
  request: FormRequest,
  client: RegisteredClient,
  assertion: ReadAssertion,
  next: AuthenticatedStep<R>,
): void {
  authentication.gate.admitAssertion(request.exchange, client.clientId, (attempt) => {
    withAssertionKeys(authentication, route, request, client, assertion, attempt, next);
  });
}

/** Finds the keys that may have signed the assertion, then hands the request on with them. */
function withAssertionKeys<R>(
  authentication: ClientAuthentication,
  route: R,
  request: FormRequest,
  client: RegisteredClient,
  assertion: ReadAssertion,
  attempt: PendingAttempt,
  next: AuthenticatedStep<R>,
): void {
  const { exchange } = request;
  const go = (keys: PublicKeys): void => {
    // Gone before anything was checked: nothing learnt, nothing counted.
    if (exchange.aborted) {
      attempt.release();
      return;
    }
    if (keys.length === 0) {
      exchange.authFailure = 'failed';
      attempt.failed('client assertion: no key of the client fits its kid and alg');
      exchange.sendError(OAuthErrors.invalidClient);
      return;
    }
    const { jwt, alg, jti, exp } = assertion;
    next(route, request, {
      client,
      assertion: { jwt, alg, keys, jti, exp },
      sink: assertionSink(exchange, attempt),
      attempt,
    });
    // The step answered on its own before any worker saw the assertion (a missing parameter, a
    // grant type not allowed): nothing was checked. Settling twice does nothing.
    if (exchange.done) attempt.release();
  };
  const keys = authentication.clientKeys?.candidates(client, assertion.alg, assertion.kid) ?? [];
  if (Array.isArray(keys)) go(keys);
  else void keys.then(go);
}

type PublicKeys = ClientAssertionCheck['keys'];

/**
 * A worker that refuses the assertion answers 401 `invalid_client` itself; a bad signature counts
 * against the client and address like a wrong secret, a replayed `jti` does not: its signature
 * verified, so it is no guess, and copies of a client's own assertion must not block the client
 * (docs/security.md, "Throttles").
 */
function assertionSink(exchange: Exchange, attempt: PendingAttempt): Sink {
  return (result: TokenTaskResult) => {
    settleAssertion(attempt, result);
    if (result[3] === 'invalid_client') exchange.authFailure = 'failed';
    deliver(exchange, result);
  };
}

/** Settles the assertion's attempt with the worker's answer to a request that carried it. */
export function settleAssertion(attempt: PendingAttempt, result: TokenTaskResult): void {
  const [status, body, , error] = result;
  if (error === 'invalid_client') {
    // Both refusals are invalid_client; the catalogue's entries tell them apart, by identity of
    // their prebuilt bodies (core/oauth_errors.ts, clientAssertionReplayed).
    if (body === OAuthErrors.clientAssertionReplayed.body) attempt.release();
    else attempt.failed('client assertion: refused by the worker (signature)');
  } else if (status >= 500) {
    // A store outage or a fault: whether the assertion was good is not known.
    attempt.release();
  } else {
    // The worker verifies the assertion before anything else, so any other answer means it passed.
    attempt.passed();
  }
}

/**
 * The task item with the caller's assertion for the worker to verify first (and without the
 * assertion among its parameters), or the item as it was for a client that used a secret.
 */
export function withClientAssertion<T extends { readonly params: FormParams }>(item: T, caller: AuthenticatedClient): T {
  if (caller.assertion === undefined) return item;
  delete item.params.client_assertion;
  delete item.params.client_assertion_type;
  return { ...item, clientAssertion: caller.assertion };
}

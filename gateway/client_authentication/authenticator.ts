import { createHash, timingSafeEqual } from 'node:crypto';
import type { RegisteredClient, StoredSecret } from '../../core/client_model.js';
import type { FormParams } from '../../wire/token_task.js';
import {
  assertionSubject,
  carriesClientAssertion,
  readClientAssertion,
  type AssertionRules,
  type ReadAssertion,
} from './client_assertion.js';
import { ClientKeys } from './client_keys.js';
import { decodeBasicAuthorization, type ClientAuthMethod } from './credentials.js';
import { VerifiedHeaders } from './verified_headers.js';
import type { PresentedCertificate } from '../http/client_certificate.js';
import { certificateRefusal } from './certificate_match.js';

/** What a request says of its TLS client certificate, read only when a client needs it (an Exchange). */
export interface CertificateHolder {
  clientCertificate(): PresentedCertificate | undefined;
}

const noCertificate: CertificateHolder = { clientCertificate: () => undefined };

export type ClientAuthFailure =
  /** Unknown client, wrong/expired secret, disabled client, or no client identified: 401. */
  | 'invalid_client'
  /** More than one mechanism, or Basic and body naming different clients: 400. */
  | 'multiple_methods'
  /** An `Authorization: Basic` header that does not decode (RFC 6749 §2.3.1, Appendix B): 400. */
  | 'malformed_basic';

export type ClientAuthResult =
  | {
      ok: true;
      client: RegisteredClient;
      method: ClientAuthMethod;
      /** `private_key_jwt`: the assertion whose claims passed; its signature and `jti` are checked in a worker. */
      assertion?: ReadAssertion;
    }
  | {
      ok: false;
      /** Why, for the log line of the failure (never a secret); absent for the plain cases. */
      reason?: string;
      failure: ClientAuthFailure;
      /** The client tried the Authorization header: RFC 6749 §5.2 wants 401 + WWW-Authenticate. */
      usedAuthorizationHeader: boolean;
      /** The client id the caller claimed, for per-client failure throttling. */
      clientId: string | undefined;
    };

/**
 * Where the authenticator finds a client by id: the config file's clients, then the client
 * registry's cache (gateway/client_registry/client_directory.ts), or the config's alone.
 */
export type ClientLookup = Pick<ReadonlyMap<string, RegisteredClient>, 'get'>;

// Compared against when the client is unknown, so an unknown id costs the same as a wrong secret.
const dummySecrets: readonly StoredSecret[] = [{ hash: Buffer.alloc(32), expiresAt: 0 }];

/**
 * Client authentication per RFC 6749 §2.3: exactly one of HTTP Basic or
 * `client_id` + `client_secret` in the body; public clients by `client_id` alone; mutual TLS
 * clients by `client_id` and their certificate (RFC 8705 §2). Secrets are
 * stored as SHA-256 values and compared in constant time after hashing the presented one, so its
 * length can neither leak nor make the comparison throw.
 */
export class ClientAuthenticator {
  /** Authorization headers that authenticated recently, and their clients. */
  private readonly verifiedHeaders: VerifiedHeaders<ClientAuthResult & { ok: true }>;

  constructor(
    private readonly clients: ClientLookup,
    private readonly now: () => number = Date.now,
    /** `private_key_jwt` claim checks; without them every assertion is refused. */
    private readonly assertionRules: AssertionRules = {
      issuer: '',
      tokenEndpoint: '',
      allowsTokenEndpointAudience: () => false,
      maxLifetimeSeconds: 0,
      now,
    },
  ) {
    this.verifiedHeaders = new VerifiedHeaders(now);
  }

  /** The client `authorization` authenticated recently (it will be answered from memory), if any. */
  rememberedClientId(authorization: string): string | undefined {
    return this.verifiedHeaders.get(authorization)?.client.clientId;
  }

  /**
   * `clients`: where to find the client, when not this authenticator's own lookup: right after a
   * store lookup, the client it found (gateway/client_authentication/step.ts).
   */
  authenticate(
    authorization: string,
    params: FormParams,
    certificates: CertificateHolder = noCertificate,
    clients: ClientLookup = this.clients,
  ): ClientAuthResult {
    if (carriesClientAssertion(params)) return this.readAssertion(authorization, params, clients);
    if (authorization.length > 0) {
      const known = this.verifiedHeaders.get(authorization);
      if (
        known !== undefined &&
        // The same client object still: a store-kept client changed (or was removed) since, or a
        // reload replaced the config's, and the header is checked again.
        clients.get(known.client.clientId) === known.client &&
        params.client_secret === undefined &&
        (params.client_id === undefined || params.client_id === known.client.clientId)
      ) {
        return known;
      }
      const basic = decodeBasicAuthorization(authorization);
      if (basic === undefined) return fail('invalid_client', true, undefined);
      if (basic === null) return fail('malformed_basic', true, undefined);
      if (params.client_secret !== undefined) return fail('multiple_methods', true, basic.clientId);
      if (params.client_id !== undefined && params.client_id !== basic.clientId) {
        return fail('multiple_methods', true, basic.clientId);
      }
      const result = this.verifySecret(clients, basic.clientId, basic.clientSecret, 'client_secret_basic', true);
      if (result.ok) this.verifiedHeaders.remember(authorization, result, result.client.secrets);
      return result;
    }
    const clientId = params.client_id;
    if (clientId === undefined) return fail('invalid_client', false, undefined);
    const secret = params.client_secret;
    if (secret !== undefined) return this.verifySecret(clients, clientId, secret, 'client_secret_post', false);
    const client = clients.get(clientId);
    const tlsMethod = client?.config.tokenEndpointAuthMethod;
    if (client !== undefined && tlsMethod !== undefined) {
      // RFC 8705 §2: `client_id` names the client, the certificate proves it.
      const refusal = certificateRefusal(client, certificates.clientCertificate());
      if (refusal !== undefined || !client.enabled) return fail('invalid_client', false, clientId, refusal);
      return { ok: true, client, method: tlsMethod };
    }
    if (client === undefined || !client.enabled || client.requireSecret || ClientKeys.usesKeys(client)) {
      return fail('invalid_client', false, clientId);
    }
    return { ok: true, client, method: 'none' };
  }

  /**
   * The client id a request names, without authenticating it: Basic's user name, else
   * `client_id` of the body. The client registry looks it up before {@link authenticate} runs.
   */
  claimedClientId(authorization: string, params: FormParams): string | undefined {
    if (authorization.length > 0) {
      const basic = decodeBasicAuthorization(authorization);
      return basic === undefined || basic === null ? undefined : basic.clientId;
    }
    // RFC 7523 §3: `client_id` is optional beside an assertion, whose `sub` names the client.
    return params.client_id ?? (params.client_assertion === undefined ? undefined : assertionSubject(params.client_assertion));
  }

  /**
   * RFC 7523 §2.2: `client_assertion_type` + `client_assertion`, and no other method in the same
   * request (RFC 6749 §2.3). Only a client with keys may use it, and such a client nothing else.
   */
  private readAssertion(authorization: string, params: FormParams, clients: ClientLookup): ClientAuthResult {
    const header = authorization.length > 0;
    if (header || params.client_secret !== undefined) return fail('multiple_methods', header, params.client_id);
    const read = readClientAssertion(params, this.assertionRules);
    if (!read.ok) return fail('invalid_client', false, read.clientId, read.reason);
    const client = clients.get(read.assertion.clientId);
    if (client === undefined || !client.enabled || !ClientKeys.usesKeys(client)) {
      return fail('invalid_client', false, read.assertion.clientId, 'client assertion: unknown client or client without keys');
    }
    return { ok: true, client, method: 'private_key_jwt', assertion: read.assertion };
  }

  private verifySecret(
    clients: ClientLookup,
    clientId: string,
    secret: string,
    method: ClientAuthMethod,
    header: boolean,
  ): ClientAuthResult {
    const client = clients.get(clientId);
    const matched = matchesStoredSecret(secret, client?.secrets, this.now());
    if (
      client === undefined ||
      !client.enabled ||
      !matched ||
      ClientKeys.usesKeys(client) ||
      client.config.tokenEndpointAuthMethod !== undefined
    )
      return fail('invalid_client', header, clientId);
    return { ok: true, client, method };
  }
}

/**
 * Whether `secret` matches one of the unexpired stored SHA-256 values. Hashes the presented
 * secret first so that its length neither leaks nor makes the comparison throw, compares against
 * every stored value (no early exit), and against a dummy when there are none, so an unknown id
 * costs the same as a wrong secret.
 */
export function matchesStoredSecret(secret: string, stored: readonly StoredSecret[] | undefined, now: number): boolean {
  const presented = createHash('sha256').update(secret, 'utf8').digest();
  const secrets = stored !== undefined && stored.length > 0 ? stored : dummySecrets;
  let matched = false;
  for (const candidate of secrets) {
    if (timingSafeEqual(presented, candidate.hash) && candidate.expiresAt > now) matched = true;
  }
  return matched && secrets !== dummySecrets;
}

function fail(
  failure: ClientAuthFailure,
  usedAuthorizationHeader: boolean,
  clientId: string | undefined,
  reason?: string,
): ClientAuthResult {
  return reason === undefined
    ? { ok: false, failure, usedAuthorizationHeader, clientId }
    : { ok: false, failure, usedAuthorizationHeader, clientId, reason };
}

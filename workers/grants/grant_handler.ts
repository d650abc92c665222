import type { Logger } from 'pino';
import type { Store } from '../../core/store/store.js';
import type { RegisteredClient } from '../../core/client_model.js';
import type { FormParams } from '../../wire/token_task.js';
import type { TaskFacts } from '../../wire/task_facts.js';
import type { JwtSigner } from '../tokens/jwt_signer.js';
import type { IdTokenBuilder } from '../tokens/id_token.js';
import type { ScopeRules } from '../../core/rules/scope_rules.js';
import type { UserProfiles } from './user_profiles.js';

/** What every grant handler may use; one instance per worker thread. */
export interface GrantServices {
  readonly issuer: string;
  readonly clients: ReadonlyMap<string, RegisteredClient>;
  readonly scopes: ScopeRules;
  readonly signer: JwtSigner;
  readonly idTokens: IdTokenBuilder;
  readonly store: Store;
  /** Epoch milliseconds; injectable so expiry rules are testable without sleeping. */
  readonly now: () => number;
  readonly logger: Logger;
  /** The profile service of `validatorsDir`, when there is one (user_profiles.ts). */
  readonly profiles?: UserProfiles | undefined;
}

/** A token request that passed the gateway: client authenticated, grant type allowed. */
export interface GrantRequest {
  readonly grantType: string;
  readonly client: RegisteredClient;
  readonly params: FormParams;
  /** The caller's address when the gateway sent it (password checks, for their log lines). */
  readonly address?: string | undefined;
  /**
   * The RFC 7638 thumbprint of the request's verified DPoP proof key (RFC 9449 §5): the access
   * token is bound to it (`cnf.jkt`, `token_type: DPoP`), and a public client's refresh token too.
   */
  readonly jkt?: string | undefined;
  /**
   * RFC 8705 §3.1: the `x5t#S256` of the client's TLS certificate, for a client whose tokens are
   * bound to it: the access token carries it in `cnf`, and a public client's refresh token too (§4).
   */
  readonly x5t?: string | undefined;
  /**
   * Where the grant notes what the gateway's audit events need (workers/task_facts_recorder.ts);
   * absent when the gateway asked for none. Never handed to a validator.
   */
  readonly facts?: TaskFacts | undefined;
}

/** The members of a successful token response (RFC 6749 §5.1). */
export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer' | 'DPoP';
  expires_in: number;
  scope: string;
  refresh_token?: string;
  id_token?: string;
  [member: string]: unknown;
}

/**
 * One grant type. Built-in grants and extension grants go through the same registry; a handler
 * rejects a request by throwing an `OAuthError`.
 */
export interface GrantHandler {
  readonly grantType: string;
  handle(request: GrantRequest, services: GrantServices): Promise<TokenResponse> | TokenResponse;
}

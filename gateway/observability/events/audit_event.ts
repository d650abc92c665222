/**
 * Audit events: what happened to whom, for a SIEM or a consumer of the event stream
 * (docs/operations.md, "Events"). Names and categories follow IdentityServer's events, so that
 * rules written for it read these too. An event never carries a secret, a token, a code or a
 * password: identifiers only (client id, subject, `jti`, username).
 */

/** Every event name Tessera emits; stable: consumers match on them. */
export const auditEventNames = [
  'TokenIssuedSuccess',
  'TokenIssuedFailure',
  'ClientAuthenticationFailure',
  'UserLoginSuccess',
  'UserLoginFailure',
  'RefreshTokenReuseDetected',
  'AuthorizationCodeReuseDetected',
  'TokenRevoked',
  'DeviceAuthorizationSuccess',
  'DeviceAuthorizationDenied',
  'ConsentGranted',
  'ConsentDenied',
  'GrantsRevoked',
  'KeyRotated',
  'ValidatorReloaded',
  'ClientCreated',
  'ClientUpdated',
  'ClientDeleted',
  'ClientSecretAdded',
  'ClientSecretExpired',
  'ApiResourceCreated',
  'ApiResourceUpdated',
  'ApiResourceDeleted',
  'ApiResourceSecretAdded',
] as const;

export type AuditEventName = (typeof auditEventNames)[number];

export type AuditEventCategory = 'Token' | 'Authentication' | 'Grants' | 'Device' | 'Keys' | 'Configuration';

const categories: Readonly<Record<AuditEventName, AuditEventCategory>> = {
  TokenIssuedSuccess: 'Token',
  TokenIssuedFailure: 'Token',
  ClientAuthenticationFailure: 'Authentication',
  UserLoginSuccess: 'Authentication',
  UserLoginFailure: 'Authentication',
  RefreshTokenReuseDetected: 'Grants',
  AuthorizationCodeReuseDetected: 'Grants',
  TokenRevoked: 'Token',
  DeviceAuthorizationSuccess: 'Device',
  DeviceAuthorizationDenied: 'Device',
  ConsentGranted: 'Grants',
  ConsentDenied: 'Grants',
  GrantsRevoked: 'Grants',
  KeyRotated: 'Keys',
  ValidatorReloaded: 'Configuration',
  ClientCreated: 'Configuration',
  ClientUpdated: 'Configuration',
  ClientDeleted: 'Configuration',
  ClientSecretAdded: 'Configuration',
  ClientSecretExpired: 'Configuration',
  ApiResourceCreated: 'Configuration',
  ApiResourceUpdated: 'Configuration',
  ApiResourceDeleted: 'Configuration',
  ApiResourceSecretAdded: 'Configuration',
};

export function categoryOf(name: AuditEventName): AuditEventCategory {
  return categories[name];
}

/** What the code that emits an event knows; the rest (time, id, category) is filled in. */
export interface AuditEventInput {
  readonly name: AuditEventName;
  readonly outcome: 'success' | 'failure';
  readonly clientId?: string | undefined;
  readonly subject?: string | undefined;
  readonly grantType?: string | undefined;
  /** The access token's `jti`: identifies the token without being it. */
  readonly jti?: string | undefined;
  readonly remoteAddress?: string | undefined;
  /** The OAuth error code (RFC 6749 §5.2) or a short reason, on failure. */
  readonly error?: string | undefined;
  /** The endpoint's path, for events that several endpoints produce. */
  readonly endpoint?: string | undefined;
  /** The username of a login event (never the password). */
  readonly username?: string | undefined;
  /** Event-specific identifiers (a key's `kid`, validator names); never secrets. */
  readonly details?: Readonly<Record<string, string | number | boolean | readonly string[]>> | undefined;
}

/** One audit event as every sink receives it. */
export interface AuditEvent extends AuditEventInput {
  /** ISO 8601, UTC. */
  readonly time: string;
  /** A random UUID: consumers deduplicate on it (a Redis Stream may be read twice). */
  readonly id: string;
  readonly category: AuditEventCategory;
  /**
   * Which of the processes sharing the port emitted it (`tessera start --processes N`,
   * docs/operations.md "Several processes"); absent with one process.
   */
  readonly process?: number;
}

/**
 * Every path Tessera serves, in one table (docs/endpoints.md): the routes register them,
 * discovery publishes them under the issuer, the access lines and events name them, and
 * `tessera start` prints them. A path changed here changes everywhere.
 */
export const endpointPaths = {
  token: '/connect/token',
  authorize: '/connect/authorize',
  authorizeLogin: '/connect/authorize/login',
  authorizeConsent: '/connect/authorize/consent',
  deviceAuthorization: '/connect/deviceauthorization',
  pushedAuthorization: '/connect/par',
  /** Dynamic client registration (RFC 7591); `/<client_id>` below it is RFC 7592's client URI. */
  registration: '/connect/register',
  devicePage: '/device',
  introspection: '/connect/introspect',
  revocation: '/connect/revocation',
  userinfo: '/connect/userinfo',
  endSession: '/connect/endsession',
  /** The signed-in user's grants: list and revoke (gateway/pages/grants_page.ts). */
  grants: '/connect/grants',
  discovery: '/.well-known/openid-configuration',
  jwks: '/.well-known/openid-configuration/jwks',
  /** RFC 8414 §3.1: the issuer's path, if any, follows this name (discovery.ts). */
  authorizationServerMetadata: '/.well-known/oauth-authorization-server',
  healthz: '/healthz',
  readyz: '/readyz',
  metrics: '/metrics',
} as const;

export type EndpointName = keyof typeof endpointPaths;

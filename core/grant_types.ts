/**
 * The grant types Tessera serves itself: the one list that config validation, the worker's grant
 * registry and discovery all read. Extension grants (validators, shipped or dropped in) come on
 * top of these and may not reuse their names.
 */

/** RFC 8628 §3.4: the device grant's `grant_type`. */
export const deviceCodeGrantType = 'urn:ietf:params:oauth:grant-type:device_code';

/** In the order discovery lists them (RFC 8414 §2 `grant_types_supported`). */
export const builtInGrantTypes = ['authorization_code', 'client_credentials', 'password', 'refresh_token', deviceCodeGrantType] as const;

export type BuiltInGrantType = (typeof builtInGrantTypes)[number];

/**
 * The JWS algorithms a DPoP proof may be signed with (RFC 9449 §4.3 check 5: asymmetric only;
 * never `none`, never an HMAC, whose key would be the public one in the header). Published as
 * `dpop_signing_alg_values_supported` in discovery (RFC 9449 §5.1) and in the `algs` of the
 * UserInfo endpoint's `DPoP` challenge (RFC 9449 §7.1).
 */
export const dpopSigningAlgorithms = ['ES256', 'ES384', 'EdDSA', 'RS256', 'PS256'] as const;

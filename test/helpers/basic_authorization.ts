/**
 * The `Authorization` header of HTTP Basic client authentication (RFC 6749 §2.3.1): the client id and
 * secret are each application/x-www-form-urlencoded first (RFC 6749 Appendix B), then joined by a colon
 * and base64-encoded (RFC 7617 §2). Every fixture client's secret is `secret`.
 */
export function basicAuthorization(clientId: string, secret = 'secret'): string {
  return basicCredentials(`${formEncode(clientId)}:${formEncode(secret)}`);
}

/** `Basic` over raw `user-pass` text as it is, for tests that need credentials no client would form. */
export function basicCredentials(userPass: string): string {
  return `Basic ${Buffer.from(userPass, 'utf8').toString('base64')}`;
}

function formEncode(value: string): string {
  return encodeURIComponent(value).replaceAll('%20', '+');
}

import type { RegisteredClient } from '../../core/client_model.js';
import { jwkThumbprint, type ThumbprintJwk } from '../../core/crypto/jwk_thumbprint.js';
import type { PresentedCertificate } from '../http/client_certificate.js';
import { normalizeAddress } from '../http/trusted_proxies.js';

/**
 * Whether `certificate` authenticates `client` by its `tokenEndpointAuthMethod` (RFC 8705 §2);
 * the reason for the log line when it does not (never the certificate itself).
 */
export function certificateRefusal(client: RegisteredClient, certificate: PresentedCertificate | undefined): string | undefined {
  if (certificate === undefined) return 'mutual TLS: no client certificate';
  const config = client.config;
  if (config.tokenEndpointAuthMethod === 'self_signed_tls_client_auth') {
    // RFC 8705 §2.2: the certificate is the client's because its key is one the client registered.
    return selfSignedKeysOf(client).has(keyThumbprint(certificate))
      ? undefined
      : 'mutual TLS: the certificate key is not in the client jwks';
  }
  // RFC 8705 §2.1: a certificate from a trusted CA, naming the client as its registration says.
  if (!certificate.chainVerified) return 'mutual TLS: the certificate does not chain to mtls.caFile or is not valid now';
  const { x509 } = certificate;
  if (config.tlsClientAuthSubjectDn !== undefined) {
    return sameDn(config.tlsClientAuthSubjectDn, x509.subject) ? undefined : 'mutual TLS: subject DN does not match';
  }
  const names = subjectAltNames(x509.subjectAltName);
  const wanted = sanOf(client);
  if (wanted === undefined) return 'mutual TLS: the client names no subject';
  const found = names.some(
    ([kind, value]) =>
      kind === wanted.kind &&
      (kind === 'DNS'
        ? value.toLowerCase() === wanted.value.toLowerCase()
        : kind === 'IP Address'
          ? normalizeAddress(value) === wanted.value
          : value === wanted.value),
  );
  return found ? undefined : `mutual TLS: no ${wanted.kind} subjectAltName matches`;
}

/** The certificate's public key as an RFC 7638 thumbprint, as the client's JWKs are compared. */
function keyThumbprint(certificate: PresentedCertificate): string {
  return jwkThumbprint(certificate.x509.publicKey.export({ format: 'jwk' }) as ThumbprintJwk);
}

const selfSignedKeys = new WeakMap<RegisteredClient, ReadonlySet<string>>();

function selfSignedKeysOf(client: RegisteredClient): ReadonlySet<string> {
  let keys = selfSignedKeys.get(client);
  if (keys === undefined) {
    keys = new Set((client.config.jwks?.keys ?? []).map((jwk) => jwkThumbprint(jwk)));
    selfSignedKeys.set(client, keys);
  }
  return keys;
}

type SanKind = 'DNS' | 'URI' | 'IP Address' | 'email';

function sanOf(client: RegisteredClient): { kind: SanKind; value: string } | undefined {
  const c = client.config;
  if (c.tlsClientAuthSanDns !== undefined) return { kind: 'DNS', value: c.tlsClientAuthSanDns };
  if (c.tlsClientAuthSanUri !== undefined) return { kind: 'URI', value: c.tlsClientAuthSanUri };
  if (c.tlsClientAuthSanIp !== undefined) return { kind: 'IP Address', value: normalizeAddress(c.tlsClientAuthSanIp) };
  if (c.tlsClientAuthSanEmail !== undefined) return { kind: 'email', value: c.tlsClientAuthSanEmail };
  return undefined;
}

/**
 * Node's `subjectAltName` text (`DNS:a, URI:b, IP Address:c`): a value holding a separator or a
 * quote comes as a JSON string (Node's fix of CVE-2021-44532), so none can forge an entry.
 */
export function subjectAltNames(text: string | undefined): [string, string][] {
  const names: [string, string][] = [];
  if (text === undefined) return names;
  let i = 0;
  while (i < text.length) {
    const colon = text.indexOf(':', i);
    if (colon === -1) break;
    const kind = text.slice(i, colon);
    let value: string;
    let end: number;
    if (text[colon + 1] === '"') {
      end = jsonStringEnd(text, colon + 1);
      try {
        value = JSON.parse(text.slice(colon + 1, end)) as string;
      } catch {
        return names;
      }
    } else {
      end = text.indexOf(', ', colon + 1);
      if (end === -1) end = text.length;
      value = text.slice(colon + 1, end);
    }
    names.push([kind, value]);
    i = text.startsWith(', ', end) ? end + 2 : text.length;
  }
  return names;
}

function jsonStringEnd(text: string, open: number): number {
  for (let i = open + 1; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text[i] === '"') return i + 1;
  }
  return text.length;
}

/**
 * RFC 8705 §2.1.2: the configured DN as RFC 4514 writes it (the last RDN of the certificate first,
 * `CN=client1,O=Acme`) against the certificate's subject as Node gives it (one RDN a line, in the
 * certificate's order, values escaped as RFC 2253 says). Attribute types compare without case,
 * values after unescaping.
 */
export function sameDn(configured: string, subject: string): boolean {
  const theirs = subject.split('\n').reverse().map(normalizeRdn);
  const ours = splitUnescaped(configured, ',').map(normalizeRdn);
  return ours.length === theirs.length && ours.every((rdn, i) => rdn === theirs[i]);
}

function normalizeRdn(rdn: string): string {
  return splitUnescaped(rdn, '+')
    .map((attribute) => {
      const eq = attribute.indexOf('=');
      if (eq === -1) return attribute.trim();
      return `${attribute.slice(0, eq).trim().toUpperCase()}=${unescapeValue(attribute.slice(eq + 1).trim())}`;
    })
    .join('+');
}

/** Splits at `separator` where it is not escaped by a backslash (RFC 4514 §2.4). */
function splitUnescaped(text: string, separator: string): string[] {
  const parts: string[] = [];
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text[i] === separator) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts;
}

/** RFC 4514 §3: `\` before a special character, or two hex digits of a UTF-8 byte. */
function unescapeValue(value: string): string {
  const bytes: number[] = [];
  const out: string[] = [];
  const flush = (): void => {
    if (bytes.length > 0) out.push(Buffer.from(bytes).toString('utf8'));
    bytes.length = 0;
  };
  for (let i = 0; i < value.length; i++) {
    const ch = value[i] as string;
    if (ch === '\\' && /^[0-9a-fA-F]{2}$/.test(value.slice(i + 1, i + 3))) {
      bytes.push(Number.parseInt(value.slice(i + 1, i + 3), 16));
      i += 2;
      continue;
    }
    flush();
    if (ch === '\\' && i + 1 < value.length) {
      out.push(value[i + 1] as string);
      i++;
    } else out.push(ch);
  }
  flush();
  return out.join('');
}

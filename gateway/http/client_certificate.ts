import { createHash, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { peerAddress, type TrustedProxies } from './trusted_proxies.js';

/** A TLS client certificate the request came with (RFC 8705), parsed once. */
export interface PresentedCertificate {
  readonly x509: X509Certificate;
  /** RFC 8705 §3.1 `x5t#S256`: base64url SHA-256 of the certificate's DER. */
  readonly thumbprint: string;
  /**
   * Issued by one of `mtls.caFile`'s anchors and valid now: checked by the TLS handshake of the
   * own listener, or here for a certificate a trusted proxy forwarded. `tls_client_auth` needs it;
   * `self_signed_tls_client_auth` does not (RFC 8705 §2.2).
   */
  readonly chainVerified: boolean;
}

/** Where the certificates come from, built from one config (`mtls`, `tls`, `trustedProxies`). */
export interface ClientCertificateOptions {
  readonly proxies: TrustedProxies;
  /** The header a trusted proxy writes the certificate into (URL-encoded PEM, nginx `$ssl_client_escaped_cert`). */
  readonly header: string;
  /** The own listener is TLS with `mtls.caFile`: uWS asked the client for a certificate in the handshake. */
  readonly ownListener: boolean;
  /** `mtls.caFile` (absolute), the trust anchors of `tls_client_auth`. */
  readonly caFile?: string | undefined;
}

// uWS.js v20.0.8 has `getX509Certificate()` on a TLS response (the peer's certificate as PEM, ''
// without one) but its types do not declare it (docs/operations.md, "Mutual TLS").
interface TlsResponse {
  getX509Certificate(): string;
}

/** Certificates parsed at most: past it the memory starts again, so a stream of distinct certificates costs a parse each, never memory. */
const maxParsed = 1024;

/**
 * The client certificates of one route set's requests: from the own TLS listener (uWS asks for one
 * when `mtls.caFile` is set and the handshake checks it), or from the header a trusted proxy writes
 * (`mtls.certificateHeader`; from any other peer the header is ignored, as forwarded addresses are).
 * A request from a trusted proxy gets the header's certificate only: the TLS certificate of that
 * connection, if any, is the proxy's.
 */
export class ClientCertificates {
  private readonly anchors: readonly X509Certificate[];
  private readonly parsed = new Map<string, PresentedCertificate | null>();

  constructor(private readonly options: ClientCertificateOptions) {
    this.anchors = options.caFile === undefined ? [] : readAnchors(options.caFile);
  }

  /** Whether any request may carry a certificate: otherwise nothing is read per request. */
  get active(): boolean {
    return this.options.ownListener || !this.options.proxies.empty;
  }

  /** Copies what the request says of its certificate while the uWS request object lives. */
  capture(res: HttpResponse, req: HttpRequest): void {
    const header = this.options.proxies.empty ? '' : req.getHeader(this.options.header);
    if (header.length > 0 || this.options.ownListener) capturedOf.set(res, { source: this, header });
  }

  /** The request's certificate, `undefined` when it has none (or sent a header from an untrusted peer). */
  certificateOf(res: HttpResponse, header: string): PresentedCertificate | undefined {
    if (!this.options.proxies.empty && this.options.proxies.trusts(peerAddress(res))) {
      if (header.length === 0) return undefined;
      let pem: string;
      try {
        pem = decodeURIComponent(header);
      } catch {
        return undefined;
      }
      return this.parse(pem, false);
    }
    if (!this.options.ownListener) return undefined;
    const pem = (res as unknown as TlsResponse).getX509Certificate();
    return pem.length === 0 ? undefined : this.parse(pem, true);
  }

  private parse(pem: string, handshakeVerified: boolean): PresentedCertificate | undefined {
    const key = handshakeVerified ? `t${pem}` : `h${pem}`;
    const known = this.parsed.get(key);
    if (known === null) return undefined;
    // A certificate that expired since it was parsed no longer chains (RFC 5280 §6.1.3).
    if (known !== undefined) return known.chainVerified && !validNow(known.x509) ? { ...known, chainVerified: false } : known;
    let x509: X509Certificate;
    try {
      // URL-encoded PEM (nginx), or base64 DER (HAProxy's `%[ssl_c_der,base64]`).
      x509 = new X509Certificate(pem.startsWith('-----BEGIN') ? pem : Buffer.from(pem, 'base64'));
    } catch {
      this.remember(key, null);
      return undefined;
    }
    const thumbprint = createHash('sha256').update(x509.raw).digest('base64url');
    const presented = { x509, thumbprint, chainVerified: handshakeVerified || issuedByAnchor(x509, this.anchors) };
    this.remember(key, presented);
    return presented;
  }

  private remember(key: string, value: PresentedCertificate | null): void {
    if (this.parsed.size >= maxParsed) this.parsed.clear();
    this.parsed.set(key, value);
  }
}

// Keyed by the uWS response, which outlives the request object and reaches every Exchange.
const capturedOf = new WeakMap<HttpResponse, { readonly source: ClientCertificates; readonly header: string }>();

/** The client certificate of the request `res` answers (see {@link ClientCertificates}). */
export function clientCertificateOf(res: HttpResponse): PresentedCertificate | undefined {
  const captured = capturedOf.get(res);
  return captured?.source.certificateOf(res, captured.header);
}

/** The anchors of `mtls.caFile`; throws, naming the field, when it holds none that parse. */
function readAnchors(file: string): X509Certificate[] {
  try {
    const text = readFileSync(file, 'utf8');
    const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
    if (blocks.length === 0) throw new Error('no PEM certificate in it');
    return blocks.map((block) => new X509Certificate(block));
  } catch (err) {
    throw new Error(`mtls.caFile: ${file} is not a usable list of certificates (${(err as Error).message})`);
  }
}

/**
 * RFC 8705 §2.1: a PKI certificate chains to a trust anchor. A forwarded certificate is the leaf
 * alone (nginx `$ssl_client_escaped_cert`), so it must be issued and signed by an anchor itself,
 * or be one (a self-signed certificate listed in `mtls.caFile`, as the TLS handshake accepts it).
 */
function issuedByAnchor(leaf: X509Certificate, anchors: readonly X509Certificate[]): boolean {
  if (!validNow(leaf)) return false;
  for (const anchor of anchors) {
    if (leaf.raw.equals(anchor.raw)) return true;
    if (leaf.checkIssued(anchor) && leaf.verify(anchor.publicKey)) return true;
  }
  return false;
}

function validNow(x509: X509Certificate): boolean {
  const now = Date.now();
  return Date.parse(x509.validFrom) <= now && now <= Date.parse(x509.validTo);
}

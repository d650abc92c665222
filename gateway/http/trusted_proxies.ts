import { BlockList, isIP } from 'node:net';
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';

/** Which request header a trusted proxy writes the client's address into. */
export type ForwardedHeader = 'x-forwarded-for' | 'forwarded';

/**
 * The proxies whose word about the client's address is taken (config `trustedProxies`,
 * docs/configuration.md): a request whose direct peer is one of them is counted under the address
 * the proxies forwarded, the right-most hop that is not itself a trusted proxy; from any other
 * peer, forwarding headers are ignored and the peer's own address counts. Only the configured
 * header is read: a proxy that writes `X-Forwarded-For` passes a client's forged `Forwarded` on
 * untouched, and the other way round.
 */
export class TrustedProxies {
  private readonly list = new BlockList();
  readonly empty: boolean;

  constructor(
    cidrs: readonly string[],
    readonly header: ForwardedHeader = 'x-forwarded-for',
  ) {
    for (const cidr of cidrs) {
      const parsed = parseCidr(cidr);
      if (parsed === undefined) throw new Error(`not a CIDR: ${cidr}`);
      this.list.addSubnet(parsed.address, parsed.prefix, parsed.family);
    }
    this.empty = cidrs.length === 0;
  }

  trusts(address: string): boolean {
    const family = isIP(address);
    if (family === 0) return false;
    return this.list.check(address, family === 4 ? 'ipv4' : 'ipv6');
  }

  /**
   * The client's address given the direct peer's and the forwarding header's value(s): walk the
   * hops from the right (each proxy appends the address it received from, RFC 7239 §5.2) past
   * every trusted proxy. A hop that is not an IP address (`unknown`, an obfuscated identifier,
   * garbage) ends the walk at the last trusted hop: what lies left of it is not vouched for.
   */
  clientAddress(peer: string, forwarded: string): string {
    if (forwarded === '' || !this.trusts(peer)) return peer;
    const hops = this.header === 'forwarded' ? forHops(forwarded) : forwarded.split(',');
    let address = peer;
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = normalizeAddress(stripPort((hops[i] as string).trim()));
      if (isIP(hop) === 0) return address;
      address = hop;
      if (!this.trusts(hop)) return hop;
    }
    return address;
  }
}

/** What the request said about forwarding, copied while the uWS request object lived. */
interface Forwarding {
  readonly proxies: TrustedProxies;
  readonly header: string;
}

// Keyed by the uWS response, which outlives the request object and reaches every Exchange.
const forwardingOf = new WeakMap<HttpResponse, Forwarding>();

/**
 * Copies the forwarding header of a request (every field of that name, comma-joined: RFC 9110
 * §5.3, some proxies add a field rather than extend the client's) before the uWS request object
 * dies, for {@link clientAddressOf}. Nothing is read when no proxy is trusted.
 */
export function captureForwarding(res: HttpResponse, req: HttpRequest, proxies: TrustedProxies): void {
  if (proxies.empty) return;
  let header = '';
  const name = proxies.header;
  req.forEach((key, value) => {
    if (key === name) header = header === '' ? value : `${header},${value}`;
  });
  forwardingOf.set(res, { proxies, header });
}

/**
 * Normalised peer addresses by the text uWS gives (an IPv4 peer of a dual-stack socket comes as
 * the full IPv4-mapped IPv6 form, whose normalising parses a URL: about 3 µs). Few peers send most
 * requests (load balancers, proxies, one client's connections), so the last ones are kept; the map
 * is emptied when it grows past its bound, so a scan of many addresses cannot grow it.
 */
const normalizedPeers = new Map<string, string>();
const maxNormalizedPeers = 1024;

function normalizedPeer(raw: string): string {
  let peer = normalizedPeers.get(raw);
  if (peer === undefined) {
    if (normalizedPeers.size >= maxNormalizedPeers) normalizedPeers.clear();
    peer = normalizeAddress(raw);
    normalizedPeers.set(raw, peer);
  }
  return peer;
}

/**
 * The peer's address as text. An IPv4 peer (alone, or IPv4-mapped as a dual-stack socket gives it)
 * is written from its four bytes; uWS's own text form of it is the full IPv6 form, which costs a
 * native call, a copy and a normalisation.
 */
export function peerAddress(res: HttpResponse): string {
  const bytes = new Uint8Array(res.getRemoteAddress());
  if (bytes.length === 4) return `${bytes[0]}.${bytes[1]}.${bytes[2]}.${bytes[3]}`;
  if (bytes.length === 16 && isIPv4Mapped(bytes)) return `${bytes[12]}.${bytes[13]}.${bytes[14]}.${bytes[15]}`;
  return normalizedPeer(Buffer.from(res.getRemoteAddressAsText()).toString('latin1'));
}

/** `::ffff:a.b.c.d` (RFC 4291 §2.5.5.2): ten zero bytes, two 0xff, then the IPv4 address. */
function isIPv4Mapped(bytes: Uint8Array): boolean {
  for (let i = 0; i < 10; i++) if (bytes[i] !== 0) return false;
  return bytes[10] === 0xff && bytes[11] === 0xff;
}

/** The client's address for throttles and logs: the peer's, or the one trusted proxies forwarded. */
export function clientAddressOf(res: HttpResponse): string {
  const peer = peerAddress(res);
  const forwarding = forwardingOf.get(res);
  return forwarding === undefined ? peer : forwarding.proxies.clientAddress(peer, forwarding.header);
}

/** The `for=` values of an RFC 7239 `Forwarded` header, one per element (§4), in order. */
function forHops(value: string): string[] {
  const hops: string[] = [];
  for (const element of value.split(',')) {
    let hop = '';
    for (const pair of element.split(';')) {
      const eq = pair.indexOf('=');
      if (eq !== -1 && pair.slice(0, eq).trim().toLowerCase() === 'for') hop = pair.slice(eq + 1).trim();
    }
    // RFC 7239 §6: an IPv6 node is quoted and bracketed, `for="[2001:db8::17]:4711"`.
    hops.push(hop.startsWith('"') && hop.endsWith('"') ? hop.slice(1, -1) : hop);
  }
  return hops;
}

/** `[v6]:port`, `[v6]`, `v4:port` → the address alone; a bare IPv6 address stays as it is. */
function stripPort(hop: string): string {
  if (hop.startsWith('[')) {
    const end = hop.indexOf(']');
    return end === -1 ? hop : hop.slice(1, end);
  }
  const colon = hop.indexOf(':');
  return colon !== -1 && colon === hop.lastIndexOf(':') ? hop.slice(0, colon) : hop;
}

/**
 * One spelling per address, so that one client is one throttle key: uWS writes IPv6 in full
 * (`0000:…:0001`) and an IPv4 client of a dual-stack listener as IPv4-mapped IPv6.
 */
export function normalizeAddress(address: string): string {
  if (!address.includes(':') || isIP(address) !== 6) return address;
  const short = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(short);
  if (mapped === null) return short;
  const high = Number.parseInt(mapped[1] as string, 16);
  const low = Number.parseInt(mapped[2] as string, 16);
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}

/** `10.0.0.0/8`, `::1/128`, or a bare address (a host: /32 or /128). */
export function parseCidr(cidr: string): { address: string; prefix: number; family: 'ipv4' | 'ipv6' } | undefined {
  const slash = cidr.indexOf('/');
  const address = slash === -1 ? cidr : cidr.slice(0, slash);
  const family = isIP(address);
  if (family === 0) return undefined;
  const max = family === 4 ? 32 : 128;
  const prefixText = slash === -1 ? String(max) : cidr.slice(slash + 1);
  if (!/^\d{1,3}$/.test(prefixText)) return undefined;
  const prefix = Number(prefixText);
  if (prefix > max) return undefined;
  return { address, prefix, family: family === 4 ? 'ipv4' : 'ipv6' };
}

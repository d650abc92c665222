import { constants, sign, type KeyObject, type SignKeyObjectInput } from 'node:crypto';
import { importPrivateKey, type SigningAlgorithm, type SigningKeyMaterial } from '../../core/signing_key.js';

/**
 * Compact JWS signing on node:crypto. Measured on these machines, `crypto.sign` does about 31k
 * ES256 signatures per second per core against about 9.7k for jose's `SignJWT` (WebCrypto job
 * overhead; docs/decisions/0002-sign-with-node-crypto.md, `npm run bench -- sign`); jose still verifies every
 * shape we emit in the tests.
 * The key is imported once and each `typ` gets a prebuilt protected header.
 */
export class JwtSigner {
  readonly kid: string;
  readonly alg: SigningAlgorithm;
  private readonly key: KeyObject;
  private readonly digest: string | null;
  private readonly signOptions: KeyObject | SignKeyObjectInput;
  private readonly headers = new Map<string, string>();

  constructor(material: SigningKeyMaterial) {
    this.kid = material.kid;
    this.alg = material.alg;
    this.key = importPrivateKey(material);
    switch (material.alg) {
      case 'ES256':
        this.digest = 'sha256';
        // JWS wants R||S (RFC 7518 §3.4), not DER.
        this.signOptions = { key: this.key, dsaEncoding: 'ieee-p1363' };
        break;
      case 'RS256':
        this.digest = 'sha256';
        this.signOptions = this.key;
        break;
      case 'PS256':
        this.digest = 'sha256';
        this.signOptions = { key: this.key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 };
        break;
      case 'EdDSA':
        this.digest = null;
        this.signOptions = this.key;
        break;
    }
  }

  /** Signs `payload` as a compact JWS with header `{ alg, typ, kid }`. */
  sign(payload: object, typ: string): string {
    let header = this.headers.get(typ);
    if (header === undefined) {
      header = `${Buffer.from(JSON.stringify({ alg: this.alg, typ, kid: this.kid })).toString('base64url')}.`;
      this.headers.set(typ, header);
    }
    const input = header + Buffer.from(JSON.stringify(payload)).toString('base64url');
    const signature = sign(this.digest, Buffer.from(input), this.signOptions);
    return `${input}.${signature.toString('base64url')}`;
  }
}

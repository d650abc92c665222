import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A PEM certificate and its key file, made by openssl for a test. */
export interface TestCertificate {
  readonly pem: string;
  readonly certFile: string;
  readonly keyFile: string;
  /** RFC 8705 §3.1 `x5t#S256`. */
  readonly thumbprint: string;
}

function openssl(args: string[]): void {
  execFileSync('openssl', args, { stdio: 'ignore' });
}

function load(certFile: string, keyFile: string): TestCertificate {
  const pem = readFileSync(certFile, 'utf8');
  const thumbprint = new X509Certificate(pem).fingerprint256.replaceAll(':', '');
  return { pem, certFile, keyFile, thumbprint: Buffer.from(thumbprint, 'hex').toString('base64url') };
}

const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/** A self-signed P-256 certificate (a CA, or a `self_signed_tls_client_auth` client's). */
export function selfSignedCertificate(dir: string, name: string, subject: string, san?: string): TestCertificate {
  const certFile = join(dir, `${name}.crt`);
  const keyFile = join(dir, `${name}.key`);
  openssl([
    'req',
    '-x509',
    ...ec,
    '-days',
    '1',
    '-subj',
    subject,
    ...(san ? ['-addext', `subjectAltName=${san}`] : []),
    '-keyout',
    keyFile,
    '-out',
    certFile,
  ]);
  return load(certFile, keyFile);
}

/** A P-256 certificate issued by `ca`, with `subject` (openssl's `/O=Acme/CN=client1` form) and SANs. */
export function issuedCertificate(dir: string, name: string, ca: TestCertificate, subject: string, san?: string): TestCertificate {
  const certFile = join(dir, `${name}.crt`);
  const keyFile = join(dir, `${name}.key`);
  const csr = join(dir, `${name}.csr`);
  openssl(['req', ...ec, '-subj', subject, '-keyout', keyFile, '-out', csr]);
  const ext = join(dir, `${name}.ext`);
  writeFileSync(ext, `basicConstraints=CA:FALSE\n${san ? `subjectAltName=${san}\n` : ''}`);
  openssl([
    'x509',
    '-req',
    '-in',
    csr,
    '-CA',
    ca.certFile,
    '-CAkey',
    ca.keyFile,
    '-CAcreateserial',
    '-days',
    '1',
    '-extfile',
    ext,
    '-out',
    certFile,
  ]);
  return load(certFile, keyFile);
}

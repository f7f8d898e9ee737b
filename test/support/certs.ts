// Self-signed test certificates made with openssl at test time (nothing secret is checked in).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestCertificate {
  certificatePem: string;
  privateKeyPem: string;
}

/** `uris`: URI subjectAltNames (SPIFFE IDs and the like) besides the DNS names. */
export function selfSigned(commonName: string, dnsNames: string[], uris: string[] = []): TestCertificate {
  const dir = mkdtempSync(join(tmpdir(), 'portico-cert-'));
  try {
    const key = join(dir, 'key.pem');
    const cert = join(dir, 'cert.pem');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        key,
        '-out',
        cert,
        '-days',
        '2',
        '-subj',
        `/CN=${commonName}`,
        '-addext',
        `subjectAltName=${[...dnsNames.map((d) => `DNS:${d}`), ...uris.map((u) => `URI:${u}`)].join(',')}`,
      ],
      { stdio: 'ignore' },
    );
    return { certificatePem: readFileSync(cert, 'utf8'), privateKeyPem: readFileSync(key, 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// Self-signed test certificates made with openssl at test time (nothing secret is checked in).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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

/** A CA (self-signed, `CA:true`) that issues client certificates (`clientAuth`) signed by its key. */
export function certificateAuthority(commonName: string): {
  ca: TestCertificate;
  issueClient(commonName: string): TestCertificate;
} {
  const dir = mkdtempSync(join(tmpdir(), 'portico-ca-'));
  const run = (args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' });
  const ecKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  try {
    const caKey = join(dir, 'ca.key');
    const caCert = join(dir, 'ca.pem');
    run([
      'req',
      '-x509',
      ...ecKey,
      '-keyout',
      caKey,
      '-out',
      caCert,
      '-days',
      '2',
      '-subj',
      `/CN=${commonName}`,
      '-addext',
      'basicConstraints=critical,CA:true',
      '-addext',
      'keyUsage=critical,keyCertSign',
    ]);
    const ca = { certificatePem: readFileSync(caCert, 'utf8'), privateKeyPem: readFileSync(caKey, 'utf8') };
    // The CA key signs more certificates later: the folder goes when the test process does.
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    let n = 0;
    return {
      ca,
      issueClient(clientName) {
        const key = join(dir, `c${n}.key`);
        const csr = join(dir, `c${n}.csr`);
        const cert = join(dir, `c${n}.pem`);
        const ext = join(dir, `c${n++}.ext`);
        run(['req', ...ecKey, '-keyout', key, '-out', csr, '-subj', `/CN=${clientName}`]);
        writeFileSync(ext, 'extendedKeyUsage=clientAuth\n');
        run([
          'x509',
          '-req',
          '-in',
          csr,
          '-CA',
          caCert,
          '-CAkey',
          caKey,
          '-CAcreateserial',
          '-out',
          cert,
          '-days',
          '2',
          '-extfile',
          ext,
        ]);
        return { certificatePem: readFileSync(cert, 'utf8'), privateKeyPem: readFileSync(key, 'utf8') };
      },
    };
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

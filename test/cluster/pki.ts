// A throw-away CA and a serving certificate for 127.0.0.1/localhost, made with the openssl CLI.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface ServingCertificate {
  caPem: string;
  caKeyPem: string;
  certPem: string;
  keyPem: string;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/** Writes ca.crt/ca.key/server.crt/server.key into `dir` and returns their contents. */
export function createServingCertificate(dir: string, extraNames: string[] = []): ServingCertificate {
  openssl(
    [
      'req',
      '-x509',
      ...EC,
      '-keyout',
      'ca.key',
      '-out',
      'ca.crt',
      '-days',
      '30',
      '-subj',
      '/CN=portico-sim-ca',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ],
    dir,
  );
  openssl(['req', ...EC, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=kube-apiserver'], dir);
  const names = [
    'DNS:localhost',
    'IP:127.0.0.1',
    'DNS:kubernetes',
    'DNS:kubernetes.default',
    'DNS:kubernetes.default.svc',
    'DNS:kubernetes.default.svc.cluster.local',
    ...extraNames,
  ];
  writeFileSync(
    join(dir, 'server.ext'),
    `subjectAltName=${names.join(',')}\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n`,
  );
  openssl(
    [
      'x509',
      '-req',
      '-in',
      'server.csr',
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      'server.crt',
      '-days',
      '30',
      '-extfile',
      'server.ext',
    ],
    dir,
  );
  const read = (f: string) => readFileSync(join(dir, f), 'utf8');
  return {
    caPem: read('ca.crt'),
    caKeyPem: read('ca.key'),
    certPem: read('server.crt'),
    keyPem: read('server.key'),
  };
}

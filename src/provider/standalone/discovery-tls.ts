// Standalone discovery certificates in the state directory: a CA and server certificate generated once (then
// reused, so restarted proxies and controllers keep trusting each other), and each fleet's own client identity.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  CERTIFICATE_FILES,
  ensureFleetCertificate,
  writeCertificateFiles,
} from '../../certificates/certificate-files.js';

export interface StandaloneDiscoveryTls {
  caFile: string;
  /** The fleet's client certificate files, issued once per fleet and run (renewed when near their end). */
  fleetFiles(fleet: string): { cert: string; key: string };
  server: { caPem: string; certPem: string; keyPem: string };
}

export async function standaloneDiscoveryTls(
  stateDir: string,
  namespace: string,
): Promise<StandaloneDiscoveryTls> {
  const dir = join(stateDir, 'certs');
  if (!existsSync(join(dir, CERTIFICATE_FILES.caCertPem))) {
    writeCertificateFiles(dir, { namespace, extraSans: [], force: false });
  }
  const file = (name: string) => join(dir, name);
  const fleetFiles = new Map<string, { cert: string; key: string }>();
  return {
    caFile: file(CERTIFICATE_FILES.caCertPem),
    fleetFiles(fleet: string): { cert: string; key: string } {
      let files = fleetFiles.get(fleet);
      if (files === undefined) {
        files = ensureFleetCertificate(dir, fleet);
        fleetFiles.set(fleet, files);
      }
      return files;
    },
    server: {
      caPem: await readFile(file(CERTIFICATE_FILES.caCertPem), 'utf8'),
      certPem: await readFile(file(CERTIFICATE_FILES.serverCertPem), 'utf8'),
      keyPem: await readFile(file(CERTIFICATE_FILES.serverKeyPem), 'utf8'),
    },
  };
}

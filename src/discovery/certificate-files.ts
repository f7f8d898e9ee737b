// The discovery certificates as PEM files in one directory: `portico certgen --local` and standalone's state dir.
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PorticoError } from '../errors.js';
import { generateCertificates } from './certs.js';

export const CERTIFICATE_FILES = {
  caCertPem: 'ca.crt',
  caKeyPem: 'ca.key',
  serverCertPem: 'server.crt',
  serverKeyPem: 'server.key',
  clientCertPem: 'client.crt',
  clientKeyPem: 'client.key',
} as const;

/** Generates and writes the six PEM files; refuses to overwrite unless `force`. */
export function writeCertificateFiles(
  dir: string,
  options: { namespace: string; extraSans: string[]; force: boolean },
): void {
  const existing = Object.values(CERTIFICATE_FILES).filter((f) => existsSync(join(dir, f)));
  if (existing.length > 0 && !options.force) {
    throw new PorticoError(
      'E_IO',
      `certgen: ${join(dir, existing[0]!)} already exists (use --force to replace the certificates)`,
    );
  }
  const certs = generateCertificates({ namespace: options.namespace, extraSans: options.extraSans });
  try {
    mkdirSync(dir, { recursive: true });
    for (const [key, file] of Object.entries(CERTIFICATE_FILES) as [
      keyof typeof CERTIFICATE_FILES,
      string,
    ][]) {
      const path = join(dir, file);
      const mode = file.endsWith('.key') ? 0o600 : 0o644;
      writeFileSync(path, certs[key], { mode });
      chmodSync(path, mode); // writeFileSync keeps the mode of a file that already existed
    }
  } catch (error) {
    throw new PorticoError('E_IO', `certgen: cannot write to ${dir}: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

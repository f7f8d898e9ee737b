// The discovery certificates as PEM files in one directory: `portico certgen --local` and standalone's state dir.
// The CA and server certificate sit at the top; each fleet's client identity under `fleets/`.
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fleetInfraName } from '../ir/fleet-infra.js';
import { PorticoError } from '../platform/errors.js';
import { fleetOfSubjectAltName, generateCertificates, issueFleetCertificate } from './certs.js';

export const CERTIFICATE_FILES = {
  caCertPem: 'ca.crt',
  caKeyPem: 'ca.key',
  serverCertPem: 'server.crt',
  serverKeyPem: 'server.key',
} as const;
export const FLEET_CERTIFICATES_DIR = 'fleets';
/** A fleet certificate this close to its end is issued again. */
const RENEW_BEFORE_DAYS = 30;
const DAY_MS = 86_400_000;

/** Generates and writes the CA and server PEM files; refuses to overwrite unless `force`. */
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
  for (const [key, file] of Object.entries(CERTIFICATE_FILES) as [keyof typeof CERTIFICATE_FILES, string][]) {
    writePem(dir, file, certs[key]);
  }
}

export function fleetCertificateFiles(dir: string, fleet: string): { cert: string; key: string } {
  const base = join(dir, FLEET_CERTIFICATES_DIR, fleetInfraName(fleet));
  return { cert: `${base}.crt`, key: `${base}.key` };
}

/**
 * The fleet's client certificate files, issued from the CA in `dir` unless the ones there still name this
 * fleet, come from this CA, match their key and stay valid for a while.
 */
export function ensureFleetCertificate(
  dir: string,
  fleet: string,
  now: Date = new Date(),
): { cert: string; key: string } {
  const files = fleetCertificateFiles(dir, fleet);
  const caCertPem = readPem(dir, CERTIFICATE_FILES.caCertPem);
  if (isCurrent(files, caCertPem, fleet, now)) return files;
  const issued = issueFleetCertificate(caCertPem, readPem(dir, CERTIFICATE_FILES.caKeyPem), fleet, { now });
  writePem(dir, join(FLEET_CERTIFICATES_DIR, `${fleetInfraName(fleet)}.key`), issued.keyPem);
  writePem(dir, join(FLEET_CERTIFICATES_DIR, `${fleetInfraName(fleet)}.crt`), issued.certPem);
  return files;
}

function isCurrent(
  files: { cert: string; key: string },
  caCertPem: string,
  fleet: string,
  now: Date,
): boolean {
  try {
    const cert = new X509Certificate(readFileSync(files.cert, 'utf8'));
    const ca = new X509Certificate(caCertPem);
    return (
      fleetOfSubjectAltName(cert.subjectAltName) === fleet &&
      cert.checkIssued(ca) &&
      cert.verify(ca.publicKey) &&
      cert.checkPrivateKey(createPrivateKey(readFileSync(files.key, 'utf8'))) &&
      new Date(cert.validTo).getTime() - now.getTime() > RENEW_BEFORE_DAYS * DAY_MS
    );
  } catch {
    return false;
  }
}

function readPem(dir: string, file: string): string {
  try {
    return readFileSync(join(dir, file), 'utf8');
  } catch (error) {
    throw new PorticoError('E_IO', `cannot read ${join(dir, file)}: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

/** Private keys are readable by the owner only. */
function writePem(dir: string, file: string, pem: string): void {
  const path = join(dir, file);
  const mode = file.endsWith('.key') ? 0o600 : 0o644;
  try {
    mkdirSync(join(path, '..'), { recursive: true, mode: 0o700 });
    writeFileSync(path, pem, { mode });
    chmodSync(path, mode); // writeFileSync keeps the mode of a file that already existed
  } catch (error) {
    throw new PorticoError('E_IO', `certgen: cannot write to ${dir}: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

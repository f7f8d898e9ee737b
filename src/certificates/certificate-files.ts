// The discovery certificates as PEM files in one directory: `portico certgen --local` and standalone's state dir.
// The CA and server certificate sit at the top; each fleet's client identity under `fleets/`.
import { createPrivateKey, X509Certificate } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { fleetInfraName } from '../ir/fleet-infra.js';
import { PorticoError } from '../platform/errors.js';
import { fleetCertificateFacts, generateCertificates, issueFleetCertificate } from './certs.js';
import {
  DEFAULT_FLEET_CERTIFICATE_LIFETIME,
  needsRenewal,
  type Validity,
} from './fleet-certificate-lifetime.js';

export const CERTIFICATE_FILES = {
  caCertPem: 'ca.crt',
  caKeyPem: 'ca.key',
  serverCertPem: 'server.crt',
  serverKeyPem: 'server.key',
} as const;
export const FLEET_CERTIFICATES_DIR = 'fleets';

/** A fleet's usable certificate files: what they hold, as the discovery server matches and renews it. */
export interface FleetCertificateState {
  files: { cert: string; key: string };
  fingerprint: string;
  validity: Validity;
}

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
 * fleet, come from this CA, match their key and are not yet due for renewal.
 */
export function ensureFleetCertificate(
  dir: string,
  fleet: string,
  options: { now?: Date; lifetimeMs?: number } = {},
): FleetCertificateState {
  const now = options.now ?? new Date();
  const found = readFleetCertificate(dir, fleet);
  const lifetimeMs = options.lifetimeMs ?? DEFAULT_FLEET_CERTIFICATE_LIFETIME.lifetimeMs;
  if (found !== undefined && !needsRenewal(found.validity, now.getTime(), lifetimeMs)) return found;
  return issueFleetCertificateFiles(dir, fleet, { now, ...options });
}

/** Issues the fleet a new certificate from the CA in `dir`, replacing its files (each atomically). */
export function issueFleetCertificateFiles(
  dir: string,
  fleet: string,
  options: { now?: Date; lifetimeMs?: number } = {},
): FleetCertificateState {
  const issued = issueFleetCertificate(
    readPem(dir, CERTIFICATE_FILES.caCertPem),
    readPem(dir, CERTIFICATE_FILES.caKeyPem),
    fleet,
    options,
  );
  // Key first: a reader that sees the new certificate finds its key already there.
  writePem(dir, join(FLEET_CERTIFICATES_DIR, `${fleetInfraName(fleet)}.key`), issued.keyPem);
  writePem(dir, join(FLEET_CERTIFICATES_DIR, `${fleetInfraName(fleet)}.crt`), issued.certPem);
  const facts = fleetCertificateFacts(issued.certPem);
  return {
    files: fleetCertificateFiles(dir, fleet),
    fingerprint: facts.fingerprint,
    validity: facts.validity,
  };
}

/** The fleet's certificate files when usable: they name the fleet, come from the CA in `dir`, match their key. */
export function readFleetCertificate(dir: string, fleet: string): FleetCertificateState | undefined {
  const files = fleetCertificateFiles(dir, fleet);
  try {
    const certPem = readFileSync(files.cert, 'utf8');
    const cert = new X509Certificate(certPem);
    const ca = new X509Certificate(readFileSync(join(dir, CERTIFICATE_FILES.caCertPem), 'utf8'));
    const facts = fleetCertificateFacts(certPem);
    const usable =
      facts.fleet === fleet &&
      cert.checkIssued(ca) &&
      cert.verify(ca.publicKey) &&
      cert.checkPrivateKey(createPrivateKey(readFileSync(files.key, 'utf8')));
    return usable ? { files, fingerprint: facts.fingerprint, validity: facts.validity } : undefined;
  } catch {
    return undefined;
  }
}

/** Every fleet with usable certificate files in `dir` (a fleet's files are named after its infrastructure). */
export function readFleetCertificates(dir: string): Map<string, FleetCertificateState> {
  const found = new Map<string, FleetCertificateState>();
  let names: string[];
  try {
    names = readdirSync(join(dir, FLEET_CERTIFICATES_DIR));
  } catch {
    return found;
  }
  for (const name of names.filter((n) => n.endsWith('.crt'))) {
    let fleet: string | undefined;
    try {
      fleet = fleetCertificateFacts(readFileSync(join(dir, FLEET_CERTIFICATES_DIR, name), 'utf8')).fleet;
    } catch {
      continue;
    }
    if (fleet === undefined || `${fleetInfraName(fleet)}.crt` !== name) continue;
    const state = readFleetCertificate(dir, fleet);
    if (state !== undefined) found.set(fleet, state);
  }
  return found;
}

/** Deletes the fleet's certificate files (its identity ends with it; a returning fleet gets a new one). */
export function removeFleetCertificate(dir: string, fleet: string): void {
  const files = fleetCertificateFiles(dir, fleet);
  rmSync(files.cert, { force: true });
  rmSync(files.key, { force: true });
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

/** Private keys are readable by the owner only. Replaced whole: a reader never sees half a file. */
function writePem(dir: string, file: string, pem: string): void {
  const path = join(dir, file);
  const temp = `${path}.${process.pid}.tmp`;
  const mode = file.endsWith('.key') ? 0o600 : 0o644;
  try {
    mkdirSync(join(path, '..'), { recursive: true, mode: 0o700 });
    writeFileSync(temp, pem, { mode });
    chmodSync(temp, mode); // writeFileSync keeps the mode of a file that already existed
    renameSync(temp, path);
  } catch (error) {
    throw new PorticoError('E_IO', `certgen: cannot write to ${dir}: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

// Standalone discovery certificates in the state directory: a CA and server certificate generated once (then
// reused, so restarted proxies and controllers keep trusting each other), and each fleet's own client identity —
// short-lived, renewed two thirds into its life, and pinned: discovery accepts for a fleet only the certificate
// its files hold now (and the one a renewal replaced, for the grace). A fleet that goes loses its files, so its
// certificate stops working at once.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  CERTIFICATE_FILES,
  type FleetCertificateState,
  issueFleetCertificateFiles,
  readFleetCertificates,
  removeFleetCertificate,
  writeCertificateFiles,
} from '../../certificates/certificate-files.js';
import {
  DEFAULT_FLEET_CERTIFICATE_LIFETIME,
  type FleetCertificateLifetime,
  needsRenewal,
  nextRenewalAt,
} from '../../certificates/fleet-certificate-lifetime.js';
import {
  type CertificatePins,
  createCertificatePins,
  type FleetCertificatePin,
} from '../../discovery/certificate-pins.js';
import { discardingLogger, type Logger } from '../../platform/log-line.js';

export interface StandaloneDiscoveryTls {
  caFile: string;
  /** The fleet's client certificate files, issued when it has none usable (renewed by a timer when due). */
  fleetFiles(fleet: string): { cert: string; key: string };
  /** The fleets that exist now: the others' certificates are deleted, and refused from now on. */
  retain(fleets: Iterable<string>): void;
  /** What discovery accepts: each fleet's current certificate (and a renewed one's predecessor, for the grace). */
  certificates: CertificatePins;
  server: { caPem: string; certPem: string; keyPem: string };
  /** Stops the renewal timer. */
  close(): void;
}

export interface StandaloneDiscoveryTlsOptions {
  lifetime?: FleetCertificateLifetime;
  /** Milliseconds since the epoch. */
  now?: () => number;
  log?: Logger;
}

// setTimeout cannot wait longer than 2^31-1 ms; a later renewal is looked at again then.
const MAX_TIMER_MS = 2_147_483_647;

interface Held {
  state: FleetCertificateState;
  previous?: { fingerprint: string; until: number };
}

export async function standaloneDiscoveryTls(
  stateDir: string,
  namespace: string,
  options: StandaloneDiscoveryTlsOptions = {},
): Promise<StandaloneDiscoveryTls> {
  const dir = join(stateDir, 'certs');
  if (!existsSync(join(dir, CERTIFICATE_FILES.caCertPem))) {
    writeCertificateFiles(dir, { namespace, extraSans: [], force: false });
  }
  const lifetime = options.lifetime ?? DEFAULT_FLEET_CERTIFICATE_LIFETIME;
  const now = options.now ?? Date.now;
  const certificates = createCertificatePins();
  // The fleets' files a previous run left: their proxies (adopted) connect with them before the first pass.
  const held = new Map<string, Held>([...readFleetCertificates(dir)].map(([f, state]) => [f, { state }]));
  let timer: NodeJS.Timeout | undefined;

  const publish = (): void => certificates.replace(pinsOf(held, now()));
  function issue(fleet: string): Held {
    const before = held.get(fleet);
    const state = issueFleetCertificateFiles(dir, fleet, {
      now: new Date(now()),
      lifetimeMs: lifetime.lifetimeMs,
    });
    // A renewal: proxies still hold the old one until they read their files again (every 10 s).
    const entry: Held =
      before === undefined
        ? { state }
        : { state, previous: { fingerprint: before.state.fingerprint, until: now() + lifetime.graceMs } };
    held.set(fleet, entry);
    return entry;
  }
  function renewDue(): void {
    for (const [fleet, entry] of held) {
      if (!needsRenewal(entry.state.validity, now(), lifetime.lifetimeMs)) continue;
      issue(fleet);
      (options.log ?? discardingLogger).info(`renewed the discovery client certificate of fleet ${fleet}`);
    }
    publish();
    schedule();
  }
  function schedule(): void {
    clearTimeout(timer);
    const due = nextRenewalAt([...held.values()].map((h) => h.state.validity));
    if (due === undefined) return;
    timer = setTimeout(renewDue, Math.min(Math.max(due - now(), 0) + 1000, MAX_TIMER_MS));
    timer.unref();
  }
  renewDue();

  const file = (name: string) => join(dir, name);
  return {
    caFile: file(CERTIFICATE_FILES.caCertPem),
    fleetFiles(fleet) {
      const entry = held.get(fleet);
      if (entry !== undefined && !needsRenewal(entry.state.validity, now(), lifetime.lifetimeMs))
        return entry.state.files;
      const issued = issue(fleet);
      publish();
      schedule();
      return issued.state.files;
    },
    retain(fleets) {
      const wanted = new Set(fleets);
      const gone = [...held.keys()].filter((fleet) => !wanted.has(fleet));
      for (const fleet of gone) {
        removeFleetCertificate(dir, fleet);
        held.delete(fleet);
      }
      if (gone.length > 0) publish();
    },
    certificates,
    server: {
      caPem: await readFile(file(CERTIFICATE_FILES.caCertPem), 'utf8'),
      certPem: await readFile(file(CERTIFICATE_FILES.serverCertPem), 'utf8'),
      keyPem: await readFile(file(CERTIFICATE_FILES.serverKeyPem), 'utf8'),
    },
    close: () => clearTimeout(timer),
  };
}

function pinsOf(held: ReadonlyMap<string, Held>, now: number): Map<string, FleetCertificatePin> {
  const pins = new Map<string, FleetCertificatePin>();
  for (const [fleet, { state, previous }] of held) {
    pins.set(
      fleet,
      previous !== undefined && previous.until > now
        ? { current: state.fingerprint, previous }
        : { current: state.fingerprint },
    );
  }
  return pins;
}

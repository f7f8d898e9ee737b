// Which client certificate each fleet may use now: the one in the fleet's Secret (or state directory), and for a
// bounded grace after a renewal the one it replaced. The provider keeps the table; the discovery server refuses
// any other certificate from the CA, and closes streams whose certificate stops being accepted, so replacing or
// deleting a fleet's Secret revokes the certificate it held.
import { EventEmitter } from 'node:events';

export interface FleetCertificatePin {
  /** SHA-256 fingerprint (`AB:CD:…`, as Node's `fingerprint256`) of the fleet's current certificate. */
  current: string;
  /** The certificate the current one renewed, still accepted until `until` (ms since the epoch). */
  previous?: { fingerprint: string; until: number };
}

export interface CertificatePins {
  /** Replaces the whole table: fleet → its pin. A fleet absent from it has no certificate that works. */
  replace(pins: ReadonlyMap<string, FleetCertificatePin>): void;
  /** Resolves once the provider has set the table for the first time (before, nothing can be judged). */
  ready(): Promise<void>;
  /** Until when (ms since the epoch) `fingerprint` stays accepted for `fleet`: Infinity while current; undefined: not. */
  acceptedUntil(fleet: string, fingerprint: string, now: number): number | undefined;
  /** Fired after each `replace` that changed the table. */
  on(event: 'change', listener: () => void): void;
  off(event: 'change', listener: () => void): void;
}

export function createCertificatePins(): CertificatePins {
  const events = new EventEmitter();
  let table: ReadonlyMap<string, FleetCertificatePin> = new Map();
  let settled = false;
  let markReady: () => void = () => {};
  const readiness = new Promise<void>((resolve) => {
    markReady = resolve;
  });
  return {
    replace(pins) {
      const changed = !settled || !samePins(table, pins);
      table = new Map(pins);
      settled = true;
      markReady();
      if (changed) events.emit('change');
    },
    ready: () => readiness,
    acceptedUntil(fleet, fingerprint, now) {
      const pin = table.get(fleet);
      if (pin === undefined) return undefined;
      if (pin.current === fingerprint) return Number.POSITIVE_INFINITY;
      const previous = pin.previous;
      return previous?.fingerprint === fingerprint && now < previous.until ? previous.until : undefined;
    },
    on: (event, listener) => events.on(event, listener),
    off: (event, listener) => events.off(event, listener),
  };
}

function samePins(a: ReadonlyMap<string, FleetCertificatePin>, b: ReadonlyMap<string, FleetCertificatePin>) {
  if (a.size !== b.size) return false;
  for (const [fleet, pin] of a) {
    const other = b.get(fleet);
    if (
      other === undefined ||
      other.current !== pin.current ||
      other.previous?.fingerprint !== pin.previous?.fingerprint ||
      other.previous?.until !== pin.previous?.until
    ) {
      return false;
    }
  }
  return true;
}

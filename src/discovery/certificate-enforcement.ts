// Keeps mutual-TLS streams to the certificate table (certificate-pins.ts): a stream whose certificate stops
// being accepted — its fleet's Secret replaced or deleted, or the grace after a renewal ended — is closed, and
// its proxy reconnects with the certificate it now finds in its files.
import { status } from '@grpc/grpc-js';
import type { CertificatePins } from './certificate-pins.js';
import type { Stream, StreamSet } from './server-streams.js';
import type { Refusal } from './server-types.js';

export interface CertificateEnforcement {
  /** Follows an admitted stream that presented the certificate with this fingerprint. */
  watch(stream: Stream, fingerprint: string): void;
  forget(stream: Stream): void;
  stop(): void;
}

// setTimeout cannot wait longer than 2^31-1 ms.
const MAX_TIMER_MS = 2_147_483_647;

/** The refusal of a certificate the fleet's Secret no longer holds, at admission or later. */
export function certificateNotCurrent(fleet: string): Refusal {
  return {
    code: status.UNAUTHENTICATED,
    details: `the client certificate of fleet '${fleet}' is not the one its Secret holds now (renewed, replaced or revoked); reconnect with the current one`,
  };
}

export function enforceCertificatePins(
  pins: CertificatePins,
  streams: StreamSet,
  now: () => number = Date.now,
): CertificateEnforcement {
  const watched = new Map<Stream, string>();

  function check(stream: Stream, fingerprint: string): void {
    if (stream.closed) {
      watched.delete(stream);
      return;
    }
    const until = pins.acceptedUntil(stream.state.fleet, fingerprint, now());
    if (until === undefined) {
      watched.delete(stream);
      const refusal = certificateNotCurrent(stream.state.fleet);
      streams.fail(stream, refusal.code, refusal.details);
      return;
    }
    // Accepted as the renewed one: look again when its grace ends.
    if (Number.isFinite(until)) {
      const wait = Math.min(Math.max(until - now(), 0) + 1, MAX_TIMER_MS);
      stream.timers.push(setTimeout(() => check(stream, fingerprint), wait));
    }
  }

  const recheckAll = (): void => {
    for (const [stream, fingerprint] of [...watched]) check(stream, fingerprint);
  };
  pins.on('change', recheckAll);
  return {
    watch(stream, fingerprint) {
      watched.set(stream, fingerprint);
      check(stream, fingerprint);
    },
    forget: (stream) => watched.delete(stream),
    stop: () => pins.off('change', recheckAll),
  };
}

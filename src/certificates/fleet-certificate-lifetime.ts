// How long a fleet's discovery client certificate lives and when it is replaced, as pure arithmetic on times
// (ms since the epoch), so the schedule is testable with any clock. A short life bounds what a leaked
// certificate is worth; renewing at two thirds leaves a third of it for a controller outage to pass before a
// proxy's certificate expires (and an expired one is replaced as soon as the controller is back).

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

export interface FleetCertificateLifetime {
  /** From issue to expiry. */
  lifetimeMs: number;
  /** After a renewal, how long the certificate it replaced is still accepted (proxies re-read their files). */
  graceMs: number;
}

/**
 * 7 days: renewed after about 4.7, so a controller may be away for over 2 days (a weekend) before any proxy's
 * certificate expires. 5 minutes of grace: a kubelet projects a changed Secret into pods within about a minute
 * or two, and the proxy reads its files every 10 s.
 */
export const DEFAULT_FLEET_CERTIFICATE_LIFETIME: FleetCertificateLifetime = {
  lifetimeMs: 7 * DAY_MS,
  graceMs: 5 * 60_000,
};

/** Shortest lifetime accepted: below it the renewal point and the grace would crowd each other. */
export const MIN_FLEET_CERTIFICATE_LIFETIME_MS = HOUR_MS;

const RENEW_AT_FRACTION = 2 / 3;

export interface Validity {
  notBefore: number;
  notAfter: number;
}

/** When a certificate valid over `validity` is due for renewal: two thirds into its life. */
export function renewalDueAt(validity: Validity): number {
  return validity.notBefore + Math.floor((validity.notAfter - validity.notBefore) * RENEW_AT_FRACTION);
}

// Issue times are written to the second: a fresh certificate may seem to outlive its lifetime by that much.
const LIFETIME_TOLERANCE_MS = 60_000;

/**
 * Whether a certificate should be replaced at `now`: past its renewal point, not yet valid at all, or (given
 * the lifetime certificates get now) living longer than that — one issued before a shorter lifetime (such as
 * the 730 days of earlier versions) is replaced at once rather than kept for most of its life.
 */
export function needsRenewal(validity: Validity, now: number, lifetimeMs?: number): boolean {
  const outlives = lifetimeMs !== undefined && validity.notAfter - now > lifetimeMs + LIFETIME_TOLERANCE_MS;
  return outlives || now >= renewalDueAt(validity) || now < validity.notBefore;
}

/** The earliest renewal point among the certificates, or undefined when there are none. */
export function nextRenewalAt(validities: Iterable<Validity>): number | undefined {
  let next: number | undefined;
  for (const validity of validities) {
    const due = renewalDueAt(validity);
    if (next === undefined || due < next) next = due;
  }
  return next;
}

/** Parses a lifetime such as `7d`, `36h` or `90m` (a whole number and a unit) into milliseconds. */
export function parseLifetime(text: string): number | undefined {
  const match = /^(\d+)(d|h|m)$/.exec(text.trim());
  if (match === null) return undefined;
  const unit = { d: DAY_MS, h: HOUR_MS, m: 60_000 }[match[2] as 'd' | 'h' | 'm'];
  return Number(match[1]) * unit;
}

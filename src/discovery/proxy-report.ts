// What a proxy reports in an Ack or Nack, bounded before it is kept: error texts are cut (a proxy must not
// be able to make the controller hold, log or write into a status megabytes of its text) and lists capped.
import type { Ack, Nack } from './protocol.js';

/** Bytes of one error text a proxy may report; the rest is cut with a marker. */
export const MAX_REPORTED_TEXT_BYTES = 4096;
/** Listener errors (and rejected resources) kept from one Ack; a fleet has far fewer listeners. */
export const MAX_REPORTED_ITEMS = 64;
/** Gateways one Ack may claim to have applied (a merged fleet's Gateways). */
export const MAX_APPLIED_GATEWAYS = 1024;
/**
 * The longest Gateway key, `<namespace>/<name>`: a namespace is a DNS label (63) and a Gateway name a DNS
 * subdomain (253). A cut key would never match its Gateway, which would then wait for its proxies forever.
 */
export const MAX_GATEWAY_KEY_BYTES = 63 + 1 + 253;

/** `text` within `maxBytes` UTF-8 bytes (marker included), cut on a character boundary. */
export function capText(text: string, maxBytes = MAX_REPORTED_TEXT_BYTES): string {
  const size = Buffer.byteLength(text, 'utf8');
  if (size <= maxBytes) return text;
  const marker = ` …[cut: ${size} bytes reported]`;
  const room = Math.max(0, maxBytes - Buffer.byteLength(marker, 'utf8'));
  // Decoding a cut buffer may end in a replacement character for a split sequence: drop it.
  const head = Buffer.from(text, 'utf8')
    .subarray(0, room)
    .toString('utf8')
    .replace(/\uFFFD$/, '');
  return `${head}${marker}`;
}

export interface ReportedState {
  appliedVersion: string;
  appliedGateways: Record<string, number>;
  listenerErrors: { listener: string; message: string }[];
  /** Undefined: the Ack rejected nothing. */
  error?: string;
}

export function ackReport(ack: Ack): ReportedState {
  const report: ReportedState = {
    appliedVersion: capText(ack.version, 64),
    appliedGateways: Object.fromEntries(
      ack.appliedGateways
        .slice(0, MAX_APPLIED_GATEWAYS)
        .map((g) => [capText(g.name, MAX_GATEWAY_KEY_BYTES), Number(g.generation)]),
    ),
    listenerErrors: ack.listenerErrors
      .slice(0, MAX_REPORTED_ITEMS)
      .map((e) => ({ listener: capText(e.listener, 256), message: capText(e.message) })),
  };
  const rejected = ack.rejectedResources ?? [];
  if (rejected.length > 0) {
    // Applied, except these: the proxy keeps their last good version, and deltas go on as usual.
    const list = rejected
      .slice(0, MAX_REPORTED_ITEMS)
      .map((r) => `${r.type} ${r.name}: ${r.error}`)
      .join('; ');
    report.error = capText(
      `version ${report.appliedVersion} applied without ${rejected.length} rejected resource(s): ${list}`,
    );
  }
  return report;
}

export function nackError(nack: Nack): string {
  return capText(`version ${capText(nack.version, 64)} rejected: ${nack.error}`);
}

// What a proxy reports on its stream — Ack (applied, with listener errors) or Nack (rejected) — kept as its node
// state. Reports beyond the stream's rate are coalesced (only the latest waits), and only a report that differs
// from the last one counts as a change, so a looping proxy cannot make the controller re-translate at will.
import type { Logger } from '../platform/log-line.js';
import type { Ack, ClientMessage, Nack } from './protocol.js';
import { ackReport, nackError } from './proxy-report.js';
import { describeStream, type Stream } from './server-streams.js';

export interface ReportHandling {
  log: Logger;
  /** After a Nack: the proxy ignores deltas until it gets everything again. */
  resendAfterNack(stream: Stream, version: string): void;
  /** What a node reports changed. */
  changed(): void;
}

/** Within the stream's rate at once; beyond it the latest report waits for a token, replacing any before it. */
export function handleReport(stream: Stream, received: ClientMessage, handling: ReportHandling): void {
  if (stream.closed) return;
  if (stream.deferTimer === undefined && stream.reports.take()) {
    if (received.kind === 'ack' && received.ack) onAck(stream, received.ack, handling);
    else if (received.kind === 'nack' && received.nack) onNack(stream, received.nack, handling);
    return;
  }
  stream.deferred = received;
  if (stream.deferTimer !== undefined) return;
  stream.deferTimer = setTimeout(() => {
    delete stream.deferTimer;
    const next = stream.deferred;
    delete stream.deferred;
    if (next !== undefined) handleReport(stream, next, handling);
  }, stream.reports.waitMs());
}

function onAck(stream: Stream, ack: Ack, handling: ReportHandling): void {
  const state = stream.state;
  const report = ackReport(ack);
  state.appliedVersion = report.appliedVersion;
  state.appliedGateways = report.appliedGateways;
  state.listenerErrors = report.listenerErrors;
  if (report.error === undefined) delete state.lastError;
  else state.lastError = report.error;
  reportChanged(stream, handling);
}

function onNack(stream: Stream, nack: Nack, handling: ReportHandling): void {
  stream.state.lastError = nackError(nack);
  handling.resendAfterNack(stream, nack.version);
  reportChanged(stream, handling);
}

/** Fires `change` (and logs an error) only when what the node reports differs from its last report. */
function reportChanged(stream: Stream, handling: ReportHandling): void {
  const { appliedVersion, appliedGateways, listenerErrors, lastError } = stream.state;
  const reported = JSON.stringify([appliedVersion, appliedGateways, listenerErrors, lastError ?? null]);
  if (reported === stream.reported) return;
  stream.reported = reported;
  if (lastError !== undefined) handling.log.warn(`discovery: ${describeStream(stream)} ${lastError}`);
  handling.changed();
}

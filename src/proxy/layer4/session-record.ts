// A layer-4 connection's or UDP flow's end, told once to the proxy's telemetry: the access log line (the HTTP
// requests' log, through the same writer) and the layer-4 metrics (bytes each way, duration, by listener and route).
import type { ResponseFlag } from '../telemetry/access-log.js';
import type { ProxyMetrics } from '../telemetry/metrics.js';
import { recordTelemetry, type TelemetrySinks } from '../telemetry/record.js';

/** Where a session's end is told (the proxy's runtime, given from above). */
export interface SessionSinks extends TelemetrySinks {
  readonly metrics: ProxyMetrics;
}

/** A connection or flow as it ended. */
export interface Session {
  /** When it started: ms since the epoch, and `performance.now()`. */
  startMs: number;
  started: number;
  listener: string;
  protocol: 'TCP' | 'TLS' | 'UDP';
  /** The SNI of a TLS connection (logged as `authority`). */
  serverName: string | undefined;
  clientAddress: string | undefined;
  bytesReceived: number;
  bytesSent: number;
  /** `-`: no route took it. */
  routeName: string;
  /** The backend endpoint, `host:port`. */
  upstream: string | undefined;
  flag: ResponseFlag | undefined;
}

/** `address:port`, bracketed for IPv6. */
export function endpointText(address: string, port: number): string {
  return address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`;
}

/** Counts the session in the metrics and writes its access log line (if sampled). */
export function recordSession(rt: SessionSinks, s: Session): void {
  const durationMs = performance.now() - s.started;
  rt.metrics.layer4Session({
    listener: s.listener,
    route: s.routeName,
    bytesReceived: s.bytesReceived,
    bytesSent: s.bytesSent,
    seconds: durationMs / 1000,
  });
  if (rt.accessLog === undefined || !rt.accessLog.sampled()) return;
  recordTelemetry(rt, true, undefined, s.started, () => ({
    startMs: s.startMs,
    method: '-',
    authority: s.serverName,
    path: '-',
    protocol: s.protocol,
    status: 0,
    flag: s.flag,
    bytesReceived: s.bytesReceived,
    bytesSent: s.bytesSent,
    durationMs,
    upstreamHost: s.upstream,
    upstreamServiceTimeMs: undefined,
    upstreamRetries: undefined,
    routeName: s.routeName,
    listener: s.listener,
    requestId: undefined,
    clientAddress: s.clientAddress,
    accessReason: undefined,
  }));
}

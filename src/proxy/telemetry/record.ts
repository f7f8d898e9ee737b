// A finished request's access log line and span, written so that telemetry can never take a process down.

import type { Logger } from '../../platform/log-line.js';
import type { AccessLog, AccessLogEntry } from './access-log.js';
import type { TraceContext } from './trace-context.js';
import { requestSpan, type Tracing } from './tracing.js';

/** Where a request's telemetry goes (the proxy's runtime, given from above): each sink undefined when off. */
export interface TelemetrySinks {
  readonly accessLog: AccessLog | undefined;
  readonly tracing: Tracing | undefined;
  readonly options: { readonly log: Logger };
}

/**
 * Writes a finished request's access log line and span. Telemetry never takes a process down: whatever one
 * request's record throws is logged and dropped (a client's reset must not reach past its own request).
 */
export function recordTelemetry(
  rt: TelemetrySinks,
  logged: boolean,
  trace: TraceContext | undefined,
  started: number,
  entry: () => AccessLogEntry,
): void {
  try {
    const e = entry();
    if (logged) rt.accessLog?.record(e);
    if (trace !== undefined) rt.tracing?.exporter.record(requestSpan(trace, started, e));
  } catch (error) {
    rt.options.log.warn(`request telemetry dropped: ${(error as Error).message}`);
  }
}

// A finished request's access log line and span, written so that telemetry can never take a process down.

import type { ProxyRuntime } from '../runtime.js';
import type { AccessLogEntry } from './access-log.js';
import type { TraceContext } from './trace-context.js';
import { requestSpan } from './tracing.js';

/**
 * Writes a finished request's access log line and span. Telemetry never takes a process down: whatever one
 * request's record throws is logged and dropped (a client's reset must not reach past its own request).
 */
export function recordTelemetry(
  rt: ProxyRuntime,
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

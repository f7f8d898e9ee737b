// A proxy's settings that change while it serves (ir/proxy-settings.ts), in the runtime's own terms: shares
// from 0 to 1, milliseconds. A change swaps the access log and tracing for new ones between requests; a request
// in flight finishes with those it started with.
import { ACCESS_LOG_FIELDS } from '../ir/access-log.js';
import { type ProxySettings, shareOfPercent } from '../ir/proxy-settings.js';
import type { LogLevel } from '../platform/log-line.js';
import type { ProxyOptions } from './options.js';
import type { AccessLogOptions } from './telemetry/access-log.js';
import type { TracingOptions } from './telemetry/span-exporter.js';

export interface RuntimeSettings {
  logLevel: LogLevel;
  /** Undefined: off. */
  accessLog: Omit<AccessLogOptions, 'write'> | undefined;
  /** Undefined: off. */
  tracing: TracingOptions | undefined;
  drainMs: number;
  maxDrainMs: number;
  workers: number;
}

export type ReconfigureOutcome = { ok: true } | { ok: false; error: string };

/**
 * What a proxy's own process takes of new settings at once, whether it serves or leads workers: its log level
 * and the times of its next drain.
 */
export function setProcessSettings(
  options: Pick<ProxyOptions, 'setLogLevel' | 'drainMs' | 'maxDrainMs'>,
  settings: RuntimeSettings,
): void {
  options.setLogLevel?.(settings.logLevel);
  options.drainMs = settings.drainMs;
  options.maxDrainMs = settings.maxDrainMs;
}

export function runtimeSettings(settings: ProxySettings): RuntimeSettings {
  const log = settings.accessLog;
  const tracing = settings.tracing;
  return {
    logLevel: settings.logLevel,
    accessLog:
      log.format === 'off'
        ? undefined
        : {
            format: log.format,
            fields: log.fields ?? [...ACCESS_LOG_FIELDS],
            sampling: shareOfPercent(log.sampling),
            ...(log.redactQueryParameters === undefined
              ? {}
              : { redactQuery: [...log.redactQueryParameters] }),
          },
    tracing:
      tracing === undefined
        ? undefined
        : { endpoint: tracing.endpoint, sampling: shareOfPercent(tracing.sampling) },
    drainMs: settings.drainSeconds * 1000,
    maxDrainMs: settings.maxDrainSeconds * 1000,
    workers: settings.workers,
  };
}

/** Whether the access log a proxy writes would change. */
export function sameAccessLog(
  a: Omit<AccessLogOptions, 'write'> | undefined,
  b: Omit<AccessLogOptions, 'write'> | undefined,
): boolean {
  if (a === undefined || b === undefined) return a === b;
  return (
    a.format === b.format &&
    a.sampling === b.sampling &&
    a.fields.length === b.fields.length &&
    a.fields.every((f, i) => f === b.fields[i]) &&
    (a.redactQuery ?? []).join(',') === (b.redactQuery ?? []).join(',')
  );
}

/** Whether the spans a proxy exports, and where, would change. */
export function sameTracing(a: TracingOptions | undefined, b: TracingOptions | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.endpoint === b.endpoint && a.sampling === b.sampling;
}

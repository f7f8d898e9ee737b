// What a proxy can change while it runs: its log level, access log, tracing, drain and workers. The host
// supervisor starts a proxy with them as flags (ir/proxy-flags.ts) and later sends a change to the proxy's admin
// API (PUT /settings, this shape as JSON), so a DataPlaneProxy edit in standalone mode restarts nothing and
// fails no request. One parser here for what the admin API accepts, naming the field it refuses.
import { PorticoError } from '../platform/errors.js';
import { isLogLevel, type LogLevel } from '../platform/log-line.js';
import {
  ACCESS_LOG_FIELDS,
  type AccessLogField,
  type FleetAccessLog,
  isAccessLogField,
  isRedactableQueryName,
  MAX_REDACTED_QUERY_NAMES,
} from './access-log.js';
import { type FleetTracing, tracingEndpointProblem } from './tracing.js';

export interface ProxySettings {
  logLevel: LogLevel;
  accessLog: FleetAccessLog;
  /** Absent: off. */
  tracing?: FleetTracing;
  /** After a stop, keep serving this long before closing idle connections (`--drain-seconds`). */
  drainSeconds: number;
  /** The longest a stop waits for requests in flight (`--max-drain-seconds`). */
  maxDrainSeconds: number;
  /** Processes serving the listeners; one serves in the proxy's own process, and only a restart adds more. */
  workers: number;
}

/** What `portico proxy` does when not told: the flags' defaults are these. */
export const PROXY_SETTINGS_DEFAULTS = {
  logLevel: 'info',
  accessLogFormat: 'json',
  drainSeconds: 5,
  maxDrainSeconds: 60,
} as const;

/** A sampling percentage (0 to 100; absent: 100) as the share the runtime samples by (0 to 1): the one conversion. */
export function shareOfPercent(percent: number | undefined): number {
  return (percent ?? 100) / 100;
}

/** The most workers any proxy runs (DataPlaneProxy `spec.workers` allows as many). */
export const MAX_PROXY_WORKERS = 1024;
const MAX_DRAIN_SECONDS = 86_400;

/** Whether two settings say the same (key order aside). */
export function sameProxySettings(a: ProxySettings | undefined, b: ProxySettings | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return canonical(a) === canonical(b);
}

function canonical(s: ProxySettings): string {
  const log = s.accessLog;
  return JSON.stringify([
    s.logLevel,
    log.format,
    log.fields ?? null,
    log.sampling ?? 100,
    log.redactQueryParameters ?? [],
    s.tracing?.endpoint ?? null,
    s.tracing?.sampling ?? 100,
    s.drainSeconds,
    s.maxDrainSeconds,
    s.workers,
  ]);
}

function invalid(field: string, problem: string): PorticoError {
  return new PorticoError('E_VALIDATION', `${field}: ${problem}`);
}

function objectAt(value: unknown, field: string, keys: readonly string[]): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalid(field, 'expected an object');
  for (const key of Object.keys(value))
    if (!keys.includes(key)) throw invalid(field === '' ? key : `${field}.${key}`, 'unknown field');
  return value as Record<string, unknown>;
}

function numberAt(value: unknown, field: string, min: number, max: number, whole = false): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max)
    throw invalid(field, `expected a number from ${min} to ${max}`);
  if (whole && !Number.isInteger(value)) throw invalid(field, 'expected a whole number');
  return value;
}

function percentAt(value: unknown, field: string): number | undefined {
  return value === undefined ? undefined : numberAt(value, field, 0, 100);
}

function accessLogAt(value: unknown): FleetAccessLog {
  const o = objectAt(value, 'accessLog', ['format', 'fields', 'sampling', 'redactQueryParameters']);
  if (o.format !== 'json' && o.format !== 'text' && o.format !== 'off')
    throw invalid('accessLog.format', 'expected json, text or off');
  const log: FleetAccessLog = { format: o.format };
  if (o.fields !== undefined) {
    if (!Array.isArray(o.fields) || o.fields.length === 0)
      throw invalid('accessLog.fields', 'expected a list of field names');
    o.fields.forEach((name: unknown, i) => {
      if (typeof name !== 'string' || !isAccessLogField(name))
        throw invalid(`accessLog.fields[${i}]`, `unknown field (known: ${ACCESS_LOG_FIELDS.join(', ')})`);
    });
    log.fields = [...(o.fields as AccessLogField[])];
  }
  const sampling = percentAt(o.sampling, 'accessLog.sampling');
  if (sampling !== undefined) log.sampling = sampling;
  if (o.redactQueryParameters !== undefined)
    log.redactQueryParameters = queryNamesAt(o.redactQueryParameters, 'accessLog.redactQueryParameters');
  return log;
}

/** Names a flag can carry (comma-separated): 1 to 128 characters, no comma, at most 32. */
function queryNamesAt(value: unknown, field: string): string[] {
  if (!Array.isArray(value) || value.length > MAX_REDACTED_QUERY_NAMES)
    throw invalid(field, `expected a list of at most ${MAX_REDACTED_QUERY_NAMES} names`);
  return value.map((name: unknown, i) => {
    if (!isRedactableQueryName(name))
      throw invalid(`${field}[${i}]`, 'expected a name of 1 to 128 characters, no comma');
    return name;
  });
}

function tracingAt(value: unknown): FleetTracing {
  const o = objectAt(value, 'tracing', ['endpoint', 'sampling']);
  if (typeof o.endpoint !== 'string') throw invalid('tracing.endpoint', 'expected a URL');
  const problem = tracingEndpointProblem(o.endpoint);
  if (problem !== undefined) throw invalid('tracing.endpoint', problem);
  const sampling = percentAt(o.sampling, 'tracing.sampling');
  return sampling === undefined ? { endpoint: o.endpoint } : { endpoint: o.endpoint, sampling };
}

/** `value` (parsed JSON) as settings, or a PorticoError (E_VALIDATION) naming the field it refuses. */
export function parseProxySettings(value: unknown): ProxySettings {
  const o = objectAt(value, '', [
    'logLevel',
    'accessLog',
    'tracing',
    'drainSeconds',
    'maxDrainSeconds',
    'workers',
  ]);
  if (typeof o.logLevel !== 'string' || !isLogLevel(o.logLevel))
    throw invalid('logLevel', 'expected debug, info, warn or error');
  const settings: ProxySettings = {
    logLevel: o.logLevel,
    accessLog: accessLogAt(o.accessLog),
    drainSeconds: numberAt(o.drainSeconds, 'drainSeconds', 0, MAX_DRAIN_SECONDS),
    maxDrainSeconds: numberAt(o.maxDrainSeconds, 'maxDrainSeconds', 0, MAX_DRAIN_SECONDS),
    workers: numberAt(o.workers, 'workers', 1, MAX_PROXY_WORKERS, true),
  };
  if (o.tracing !== undefined) settings.tracing = tracingAt(o.tracing);
  return settings;
}

// The `portico proxy` flags that carry a proxy's settings (ir/proxy-settings.ts: log level, access log, tracing,
// drain, workers), in one table that both writes and parses them: the Kubernetes renderer and the host supervisor
// write them from it, and `portico proxy` declares them, with their defaults, and reads them back as settings from
// it (src/cli/proxy.ts). A new DataPlaneProxy setting is a row here, its schema and the proxy's use of it.
import { PorticoError } from '../platform/errors.js';
import { isLogLevel, LOG_LEVELS, type LogLevel } from '../platform/log-line.js';
import {
  ACCESS_LOG_FIELDS,
  type AccessLogField,
  type FleetAccessLog,
  isAccessLogField,
  isRedactableQueryName,
  MAX_REDACTED_QUERY_NAMES,
} from './access-log.js';
import { MAX_PROXY_WORKERS, PROXY_SETTINGS_DEFAULTS, type ProxySettings } from './proxy-settings.js';
import { type FleetTracing, tracingEndpointProblem } from './tracing.js';

export interface FleetProxySettings {
  logLevel?: LogLevel | undefined;
  accessLog?: FleetAccessLog | undefined;
  tracing?: FleetTracing | undefined;
}

/** What a row writes from: a fleet's settings, and the rest of a proxy's when the writer has them. */
type FlagSource = FleetProxySettings &
  Partial<Pick<ProxySettings, 'drainSeconds' | 'maxDrainSeconds' | 'workers'>>;

/** One settings flag: what it writes and what it reads back. */
export interface SettingFlag<T> {
  /** What `portico proxy` takes when the flag is absent; undefined: nothing (off, or decided when it starts). */
  readonly default: string | undefined;
  /** The flag's value for `s`; undefined: the flag is not given. */
  write(s: FlagSource): string | undefined;
  /** The flag's text as the setting's value, or a usage error naming `flag`. */
  parse(text: string, flag: string): T;
}

function usage(flag: string, problem: string): PorticoError {
  return new PorticoError('E_USAGE', `${flag}: ${problem}`);
}

/** A number (a percentage, seconds, a count) as its flag's text. */
function numberFlag(n: number | undefined): string | undefined {
  return n === undefined ? undefined : String(n);
}

/** A flag's number from `min` to `max` (whole if asked), else an error saying what it expects. */
function numberOf(
  text: string,
  flag: string,
  expected: string,
  range: { min: number; max: number; whole?: boolean },
): number {
  const n = Number(text);
  const bad = text.trim() === '' || !Number.isFinite(n) || n < range.min || n > range.max;
  if (bad || (range.whole === true && !Number.isInteger(n)))
    throw usage(flag, `expected ${expected}, got '${text}'`);
  return n;
}

/** A percentage (0 to 100) as the settings carry it; the share the runtime samples by is `shareOfPercent`'s. */
function percentOf(text: string, flag: string): number {
  return numberOf(text, flag, 'a percentage from 0 to 100', { min: 0, max: 100 });
}

function secondsOf(text: string, flag: string): number {
  return numberOf(text, flag, 'seconds', { min: 0, max: Number.MAX_SAFE_INTEGER });
}

function listOf(text: string): string[] {
  return text.split(',').map((item) => item.trim());
}

function logLevelOf(text: string, flag: string): LogLevel {
  if (!isLogLevel(text)) throw usage(flag, `'${text}' is not ${LOG_LEVELS.join(', ')}`);
  return text;
}

function formatOf(text: string, flag: string): FleetAccessLog['format'] {
  if (text !== 'json' && text !== 'text' && text !== 'off')
    throw usage(flag, `expected json, text or off, got '${text}'`);
  return text;
}

function fieldsOf(text: string, flag: string): AccessLogField[] {
  return listOf(text).map((name) => {
    if (!isAccessLogField(name))
      throw usage(flag, `unknown access log field '${name}' (known: ${ACCESS_LOG_FIELDS.join(', ')})`);
    return name;
  });
}

function queryNamesOf(text: string, flag: string): string[] {
  const names = listOf(text);
  if (names.length > MAX_REDACTED_QUERY_NAMES || !names.every(isRedactableQueryName))
    throw usage(
      flag,
      `expected at most ${MAX_REDACTED_QUERY_NAMES} names of 1 to 128 characters, got '${text}'`,
    );
  return names;
}

function endpointOf(text: string, flag: string): string {
  const problem = tracingEndpointProblem(text);
  if (problem !== undefined) throw usage(flag, problem);
  return text;
}

function workersOf(text: string, flag: string): number {
  return numberOf(text, flag, `a whole number from 1 to ${MAX_PROXY_WORKERS}`, {
    min: 1,
    max: MAX_PROXY_WORKERS,
    whole: true,
  });
}

/** The access log's detail flags go along only with a log that is on. */
function logOn(s: FlagSource): FleetAccessLog | undefined {
  return s.accessLog === undefined || s.accessLog.format === 'off' ? undefined : s.accessLog;
}

/** The settings flags by name (without the dashes), in the order they are written. */
export const PROXY_SETTING_FLAGS = {
  'log-level': { default: PROXY_SETTINGS_DEFAULTS.logLevel, write: (s) => s.logLevel, parse: logLevelOf },
  'access-log': {
    default: PROXY_SETTINGS_DEFAULTS.accessLogFormat,
    write: (s) => s.accessLog?.format,
    parse: formatOf,
  },
  'access-log-fields': { default: undefined, write: (s) => logOn(s)?.fields?.join(','), parse: fieldsOf },
  'access-log-sampling': { default: '100', write: (s) => numberFlag(logOn(s)?.sampling), parse: percentOf },
  'access-log-redact-query': {
    default: undefined,
    write: (s) => logOn(s)?.redactQueryParameters?.join(','),
    parse: queryNamesOf,
  },
  'tracing-endpoint': { default: undefined, write: (s) => s.tracing?.endpoint, parse: endpointOf },
  'tracing-sampling': {
    default: '100',
    write: (s) => (s.tracing === undefined ? undefined : numberFlag(s.tracing.sampling)),
    parse: percentOf,
  },
  'drain-seconds': {
    default: String(PROXY_SETTINGS_DEFAULTS.drainSeconds),
    write: (s) => numberFlag(s.drainSeconds),
    parse: secondsOf,
  },
  'max-drain-seconds': {
    default: String(PROXY_SETTINGS_DEFAULTS.maxDrainSeconds),
    write: (s) => numberFlag(s.maxDrainSeconds),
    parse: secondsOf,
  },
  workers: { default: undefined, write: (s) => numberFlag(s.workers), parse: workersOf },
} as const satisfies Readonly<Record<string, SettingFlag<unknown>>>;

export type SettingFlagName = keyof typeof PROXY_SETTING_FLAGS;
type Parsed<N extends SettingFlagName> = ReturnType<(typeof PROXY_SETTING_FLAGS)[N]['parse']>;

/** One flag's value from the given text, else its default; undefined when neither is there. */
function read<N extends SettingFlagName>(
  given: Partial<Record<SettingFlagName, string>>,
  name: N,
): Parsed<N> | undefined {
  const text = given[name] ?? PROXY_SETTING_FLAGS[name].default;
  return text === undefined ? undefined : (PROXY_SETTING_FLAGS[name].parse(text, `--${name}`) as Parsed<N>);
}

function accessLogRead(given: Partial<Record<SettingFlagName, string>>): FleetAccessLog {
  const fields = read(given, 'access-log-fields');
  const sampling = read(given, 'access-log-sampling');
  const redact = read(given, 'access-log-redact-query');
  return {
    format: read(given, 'access-log')!,
    ...(fields === undefined ? {} : { fields }),
    ...(sampling === undefined ? {} : { sampling }),
    ...(redact === undefined ? {} : { redactQueryParameters: redact }),
  };
}

function tracingRead(given: Partial<Record<SettingFlagName, string>>): FleetTracing | undefined {
  const sampling = read(given, 'tracing-sampling');
  const endpoint = read(given, 'tracing-endpoint');
  if (endpoint === undefined) return undefined;
  return sampling === undefined ? { endpoint } : { endpoint, sampling };
}

/**
 * The settings the flags `given` say (text by flag name; absent ones take their default), every flag checked with
 * a usage error naming it; `workers` when not given is the proxy's own choice at start.
 */
export function proxySettingsOfFlags(
  given: Partial<Record<SettingFlagName, string>>,
  defaultWorkers: () => number,
): ProxySettings {
  const tracing = tracingRead(given);
  return {
    logLevel: read(given, 'log-level')!,
    accessLog: accessLogRead(given),
    ...(tracing === undefined ? {} : { tracing }),
    drainSeconds: read(given, 'drain-seconds')!,
    maxDrainSeconds: read(given, 'max-drain-seconds')!,
    workers: read(given, 'workers') ?? defaultWorkers(),
  };
}

function flags(source: FlagSource, names: readonly (keyof typeof PROXY_SETTING_FLAGS)[]): string[] {
  const args: string[] = [];
  for (const name of names) {
    const value = PROXY_SETTING_FLAGS[name].write(source);
    if (value !== undefined) args.push(`--${name}`, value);
  }
  return args;
}

const ALL = Object.keys(PROXY_SETTING_FLAGS) as (keyof typeof PROXY_SETTING_FLAGS)[];
const FLEET = ALL.filter((name) => !['drain-seconds', 'max-drain-seconds', 'workers'].includes(name));

/**
 * The flags for a fleet's `settings`: none for what is left at the proxy's defaults (a log level of info
 * included, so a fleet that does not set one renders as it always did).
 */
export function fleetProxyFlags(settings: FleetProxySettings): string[] {
  const logLevel = settings.logLevel === PROXY_SETTINGS_DEFAULTS.logLevel ? undefined : settings.logLevel;
  return flags({ ...settings, logLevel }, FLEET);
}

/** The flags that start a proxy with exactly `settings`, every one given (none left to a default). */
export function proxySettingsFlags(settings: ProxySettings): string[] {
  return flags(settings, ALL);
}

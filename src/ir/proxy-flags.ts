// The `portico proxy` flags that carry a proxy's settings (ir/proxy-settings.ts: log level, access log, tracing,
// drain, workers), in one table: the Kubernetes renderer and the host supervisor write them from it, and
// `portico proxy` declares them, with their defaults, from it (src/cli/proxy.ts). A new DataPlaneProxy setting
// is a row here, its schema and the proxy's use of it.
import type { LogLevel } from '../platform/log-line.js';
import type { FleetAccessLog } from './access-log.js';
import { PROXY_SETTINGS_DEFAULTS, type ProxySettings } from './proxy-settings.js';
import type { FleetTracing } from './tracing.js';

export interface FleetProxySettings {
  logLevel?: LogLevel | undefined;
  accessLog?: FleetAccessLog | undefined;
  tracing?: FleetTracing | undefined;
}

/** What a row writes from: a fleet's settings, and the rest of a proxy's when the writer has them. */
type FlagSource = FleetProxySettings &
  Partial<Pick<ProxySettings, 'drainSeconds' | 'maxDrainSeconds' | 'workers'>>;

/** One settings flag. */
export interface SettingFlag {
  /** What `portico proxy` takes when the flag is absent; undefined: nothing (off, or decided when it starts). */
  readonly default: string | undefined;
  /** The flag's value for `s`; undefined: the flag is not given. */
  write(s: FlagSource): string | undefined;
}

/** A number (a percentage, seconds, a count) as its flag's text. */
function numberFlag(n: number | undefined): string | undefined {
  return n === undefined ? undefined : String(n);
}

/** The access log's detail flags go along only with a log that is on. */
function logOn(s: FlagSource): FleetAccessLog | undefined {
  return s.accessLog === undefined || s.accessLog.format === 'off' ? undefined : s.accessLog;
}

/** The settings flags by name (without the dashes), in the order they are written. */
export const PROXY_SETTING_FLAGS = {
  'log-level': { default: PROXY_SETTINGS_DEFAULTS.logLevel, write: (s) => s.logLevel },
  'access-log': { default: PROXY_SETTINGS_DEFAULTS.accessLogFormat, write: (s) => s.accessLog?.format },
  'access-log-fields': { default: undefined, write: (s) => logOn(s)?.fields?.join(',') },
  'access-log-sampling': { default: '100', write: (s) => numberFlag(logOn(s)?.sampling) },
  'access-log-redact-query': { default: undefined, write: (s) => logOn(s)?.redactQueryParameters?.join(',') },
  'tracing-endpoint': { default: undefined, write: (s) => s.tracing?.endpoint },
  'tracing-sampling': {
    default: '100',
    write: (s) => (s.tracing === undefined ? undefined : numberFlag(s.tracing.sampling)),
  },
  'drain-seconds': {
    default: String(PROXY_SETTINGS_DEFAULTS.drainSeconds),
    write: (s) => numberFlag(s.drainSeconds),
  },
  'max-drain-seconds': {
    default: String(PROXY_SETTINGS_DEFAULTS.maxDrainSeconds),
    write: (s) => numberFlag(s.maxDrainSeconds),
  },
  workers: { default: undefined, write: (s) => numberFlag(s.workers) },
} as const satisfies Readonly<Record<string, SettingFlag>>;

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

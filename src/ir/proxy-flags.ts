// The `portico proxy` flags that carry what a fleet's DataPlaneProxy says about the proxies themselves (their
// log level, access log and tracing): the Kubernetes renderer and the host supervisor pass the same ones.
import type { LogLevel } from '../platform/log-line.js';
import type { FleetAccessLog } from './access-log.js';
import type { ProxySettings } from './proxy-settings.js';
import type { FleetTracing } from './tracing.js';

export interface FleetProxySettings {
  logLevel?: LogLevel | undefined;
  accessLog?: FleetAccessLog | undefined;
  tracing?: FleetTracing | undefined;
}

function accessLogFlags(log: FleetAccessLog): string[] {
  const args = ['--access-log', log.format];
  if (log.format !== 'off') {
    if (log.fields !== undefined) args.push('--access-log-fields', log.fields.join(','));
    if (log.sampling !== undefined) args.push('--access-log-sampling', String(log.sampling));
    if (log.redactQueryParameters !== undefined)
      args.push('--access-log-redact-query', log.redactQueryParameters.join(','));
  }
  return args;
}

function tracingFlags(tracing: FleetTracing): string[] {
  const args = ['--tracing-endpoint', tracing.endpoint];
  if (tracing.sampling !== undefined) args.push('--tracing-sampling', String(tracing.sampling));
  return args;
}

/** The flags for `settings`; none for what is left at the proxy's defaults. */
export function fleetProxyFlags(settings: FleetProxySettings): string[] {
  const args: string[] = [];
  if (settings.logLevel !== undefined && settings.logLevel !== 'info')
    args.push('--log-level', settings.logLevel);
  if (settings.accessLog !== undefined) args.push(...accessLogFlags(settings.accessLog));
  if (settings.tracing !== undefined) args.push(...tracingFlags(settings.tracing));
  return args;
}

/** The flags that start a proxy with exactly `settings`, every one given (none left to a default). */
export function proxySettingsFlags(settings: ProxySettings): string[] {
  return [
    '--log-level',
    settings.logLevel,
    ...accessLogFlags(settings.accessLog),
    ...(settings.tracing === undefined ? [] : tracingFlags(settings.tracing)),
    '--drain-seconds',
    String(settings.drainSeconds),
    '--max-drain-seconds',
    String(settings.maxDrainSeconds),
    '--workers',
    String(settings.workers),
  ];
}

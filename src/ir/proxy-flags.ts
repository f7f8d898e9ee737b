// The `portico proxy` flags that carry what a fleet's DataPlaneProxy says about the proxies themselves (their
// log level, access log and tracing): the Kubernetes renderer and the host supervisor pass the same ones.
import type { LogLevel } from '../platform/log-line.js';
import type { FleetAccessLog } from './access-log.js';
import type { FleetTracing } from './tracing.js';

export interface FleetProxySettings {
  logLevel?: LogLevel | undefined;
  accessLog?: FleetAccessLog | undefined;
  tracing?: FleetTracing | undefined;
}

/** The flags for `settings`; none for what is left at the proxy's defaults. */
export function fleetProxyFlags(settings: FleetProxySettings): string[] {
  const args: string[] = [];
  if (settings.logLevel !== undefined && settings.logLevel !== 'info')
    args.push('--log-level', settings.logLevel);
  const log = settings.accessLog;
  if (log !== undefined) {
    args.push('--access-log', log.format);
    if (log.format !== 'off') {
      if (log.fields !== undefined) args.push('--access-log-fields', log.fields.join(','));
      if (log.sampling !== undefined) args.push('--access-log-sampling', String(log.sampling));
    }
  }
  const tracing = settings.tracing;
  if (tracing !== undefined) {
    args.push('--tracing-endpoint', tracing.endpoint);
    if (tracing.sampling !== undefined) args.push('--tracing-sampling', String(tracing.sampling));
  }
  return args;
}

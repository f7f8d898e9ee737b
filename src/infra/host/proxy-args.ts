// The `portico proxy` command line for a fleet run on this host. Every proxy gets its own loopback address,
// and its admin, metrics and readiness ports bind that address too, so several proxies never collide. What
// can change while it runs (ir/proxy-settings.ts) is not here: the supervisor adds it as flags at a start, and
// sends a change to the running proxy.
import type { FleetProxySettings } from '../../ir/proxy-flags.js';
import { PROXY_SETTINGS_DEFAULTS, type ProxySettings } from '../../ir/proxy-settings.js';
import { PORTS } from '../../ir/well-known.js';

export interface HostProxyArgsInput {
  fleet: string;
  /** The node ID the proxy reports to discovery. */
  node: string;
  /** The fleet's loopback address (from the address pool). */
  address: string;
  /** The controller's discovery server, `HOST:PORT`. */
  discoveryAddress: string;
  caFile: string;
  certFile: string;
  keyFile: string;
  /** The name in the discovery server's certificate, when it differs from the discovery host. */
  serverName?: string;
  /** The file the proxy appends its stage timestamps to (diagnostics). */
  traceEvents?: string;
  /** The most workers a settings change may ask of it: the supervisor's cap. */
  maxWorkers: number;
}

export interface HostProxySettingsInput {
  /** Keep serving after a stop before closing idle connections; absent: the proxy's default. */
  drainSeconds?: number | undefined;
  /** The longest a stop waits for requests in flight; absent: the proxy's default. */
  maxDrainSeconds?: number | undefined;
  workers: number;
  /** The fleet's log level, access log and tracing; absent: the proxy's defaults. */
  fleet?: FleetProxySettings | undefined;
}

/** Every setting of the proxy spelled out, defaults filled in, so a change to any one is seen as one. */
export function hostProxySettings(input: HostProxySettingsInput): ProxySettings {
  const settings: ProxySettings = {
    logLevel: input.fleet?.logLevel ?? PROXY_SETTINGS_DEFAULTS.logLevel,
    accessLog: input.fleet?.accessLog ?? { format: PROXY_SETTINGS_DEFAULTS.accessLogFormat },
    drainSeconds: input.drainSeconds ?? PROXY_SETTINGS_DEFAULTS.drainSeconds,
    maxDrainSeconds: input.maxDrainSeconds ?? PROXY_SETTINGS_DEFAULTS.maxDrainSeconds,
    workers: input.workers,
  };
  if (input.fleet?.tracing !== undefined) settings.tracing = input.fleet.tracing;
  return settings;
}

/** The proxy's own ports, on the fleet's address (the proxy CLI's defaults, moved off 0.0.0.0); reserved-ports.ts
 * keeps Gateway listeners off them. */
export const HOST_PROXY_PORTS = { admin: PORTS.proxyAdmin, metrics: PORTS.metrics, ready: PORTS.proxyReady };

export function hostProxyArgs(input: HostProxyArgsInput): string[] {
  const on = (port: number) => `${input.address}:${port}`;
  const args = [
    'proxy',
    '--discovery',
    input.discoveryAddress,
    '--fleet',
    input.fleet,
    '--node',
    input.node,
    '--ca-file',
    input.caFile,
    '--cert-file',
    input.certFile,
    '--key-file',
    input.keyFile,
    '--bind-address',
    input.address,
    '--admin-address',
    on(HOST_PROXY_PORTS.admin),
    '--metrics-address',
    on(HOST_PROXY_PORTS.metrics),
    '--ready-address',
    on(HOST_PROXY_PORTS.ready),
  ];
  args.push('--max-workers', String(input.maxWorkers));
  if (input.serverName !== undefined) args.push('--server-name', input.serverName);
  if (input.traceEvents !== undefined) args.push('--trace-events', input.traceEvents);
  return args;
}

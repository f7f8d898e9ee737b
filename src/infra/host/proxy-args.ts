// The `portico proxy` command line for a fleet run on this host. Every proxy gets its own loopback address,
// and its admin, metrics and readiness ports bind that address too, so several proxies never collide.
import { type FleetProxySettings, fleetProxyFlags } from '../../ir/proxy-flags.js';
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
  drainSeconds?: number;
  maxDrainSeconds?: number;
  /** Worker processes; absent: the proxy's own default (the CPUs it may use). */
  workers?: number;
  /** The fleet's log level, access log and tracing; absent: the proxy's defaults. */
  settings?: FleetProxySettings | undefined;
  /** The file the proxy appends its stage timestamps to (diagnostics). */
  traceEvents?: string;
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
  if (input.serverName !== undefined) args.push('--server-name', input.serverName);
  if (input.drainSeconds !== undefined) args.push('--drain-seconds', String(input.drainSeconds));
  if (input.maxDrainSeconds !== undefined) args.push('--max-drain-seconds', String(input.maxDrainSeconds));
  if (input.workers !== undefined) args.push('--workers', String(input.workers));
  if (input.settings !== undefined) args.push(...fleetProxyFlags(input.settings));
  if (input.traceEvents !== undefined) args.push('--trace-events', input.traceEvents);
  return args;
}

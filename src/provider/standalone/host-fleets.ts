// Standalone infrastructure: one supervised `portico proxy` process per fleet on its own loopback address,
// addresses claimed host-wide, and the proxies a previous controller left running adopted, not restarted.
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import {
  type AddressClaims,
  DEFAULT_CLAIMS_DIR,
  openAddressClaims,
} from '../../infra/host/address-claims.js';
import { type AddressPool, openAddressPool } from '../../infra/host/address-pool.js';
import { HOST_PROXY_PORTS, hostProxyArgs, hostProxySettings } from '../../infra/host/proxy-args.js';
import { PROXY_RECORDS_DIR } from '../../infra/host/proxy-records.js';
import {
  createProxySupervisor,
  formatProxyLogLine,
  type ProxyLogLine,
  type ProxySpec,
  type ProxySupervisor,
} from '../../infra/host/supervisor.js';
import type { FleetConfig } from '../../ir/fleet-config.js';
import type { FleetInfra } from '../../ir/fleet-infra.js';
import { DISCOVERY_SERVER_NAME, PORTS } from '../../ir/well-known.js';
import { type Logger, splitLogLevel } from '../../platform/log-line.js';
import type { StandaloneDiscoveryTls } from './discovery-tls.js';
import { adoptableProxies } from './proxy-adoption.js';
import { runsOnAddress } from './state-dir-activity.js';

export const DEFAULT_PROXY_WORKERS_MAX = 4;
// Moves of one fleet to another address after "address in use", per run.
const MAX_ADDRESS_MOVES = 3;

export interface HostFleetsOptions {
  stateDir: string;
  /** CIDR the fleets' loopback addresses come from. */
  addressPool: string;
  addressClaimsDir?: string;
  log: Logger;
  /** A process started, exited or changed health, or must move: the data plane changed. */
  onChange: () => void;
  proxyEntryPoint?: string;
  proxyStopGraceMs?: number;
}

export interface HostFleets {
  claims: AddressClaims;
  pool: AddressPool;
  supervisor: ProxySupervisor;
}

export async function openHostFleets(options: HostFleetsOptions): Promise<HostFleets> {
  const { log } = options;
  // Addresses are claimed host-wide: another controller (its own state dir) never gets one of ours, nor we its.
  const claims = openAddressClaims(
    options.addressClaimsDir ?? DEFAULT_CLAIMS_DIR,
    options.stateDir,
    runsOnAddress,
  );
  const pool = await openAddressPool({
    cidr: options.addressPool,
    stateDir: options.stateDir,
    source: '--address-pool',
    onWarning: (m) => log.warn(m),
    claims,
  });
  // Proxies a previous controller left running (it crashed, or stopped without stopping them) keep serving:
  // adopted, they keep their addresses and are reconnected to this discovery server at once.
  const recordsDir = join(options.stateDir, PROXY_RECORDS_DIR);
  const adoptable = await adoptableProxies(recordsDir, log);
  for (const record of adoptable) pool.hold(record.fleet, record.address);
  const supervisor = createProxySupervisor({
    entryPoint: options.proxyEntryPoint,
    logDir: join(options.stateDir, 'logs'),
    recordsDir,
    stopGraceMs: options.proxyStopGraceMs,
    log: (line) => logProxyLine(log, line),
    onChange: options.onChange,
    onAddressInUse: addressMover(pool, options),
  });
  // Their discovery clients wait out a backoff of up to 30 s: adopting sends SIGHUP, which reconnects them now.
  supervisor.adopt(adoptable);
  for (const record of adoptable)
    log.info(`adopted proxy ${record.fleet} (pid ${record.pid}) on ${record.address}`);
  return { claims, pool, supervisor };
}

/**
 * A proxy's line keeps the level its proxy gave it (output without one, a crash's trace say, counts as info);
 * what the supervisor says about a proxy is always trouble: a failed probe, an exit, a file it cannot write.
 */
function logProxyLine(log: Logger, line: ProxyLogLine): void {
  if (line.source === 'supervisor') {
    log.warn(formatProxyLogLine(line));
    return;
  }
  const { level, text } = splitLogLevel(line.line);
  log[level ?? 'info'](formatProxyLogLine({ ...line, line: text }));
}

function addressMover(
  pool: AddressPool,
  options: HostFleetsOptions,
): (fleet: string, address: string) => void {
  const moves = new Map<string, number>();
  return (fleet, address) => {
    // Something that is not ours binds there; a few moves find a free address, more mean a wildcard bind.
    const moved = (moves.get(fleet) ?? 0) + 1;
    moves.set(fleet, moved);
    if (moved > MAX_ADDRESS_MOVES) {
      options.log.error(
        `fleet ${fleet}: ${address} is in use too, after ${MAX_ADDRESS_MOVES} moves; is something bound to ` +
          `0.0.0.0 on the proxy ports (${Object.values(HOST_PROXY_PORTS).join(', ')})? Retrying there`,
      );
      return;
    }
    pool.avoid(address);
    options.log.warn(`fleet ${fleet}: ${address} is in use by another process; moving it to another address`);
    options.onChange();
  };
}

export interface ProxySpecOptions {
  discoveryAddress: string;
  tls: StandaloneDiscoveryTls;
  proxyDrainSeconds?: number;
  /** Most worker processes per proxy: a fleet gets its DataPlaneProxy's workers or the CPUs, up to this. */
  proxyWorkersMax?: number;
  /** The file the proxies append their stage timestamps to (diagnostics). */
  traceEvents?: string;
}

/** The process each fleet runs as, on the address the pool gave it. */
export function proxySpecs(
  fleets: readonly FleetConfig[],
  infra: readonly FleetInfra[],
  addresses: ReadonlyMap<string, string>,
  options: ProxySpecOptions,
): ProxySpec[] {
  const workersMax = options.proxyWorkersMax ?? DEFAULT_PROXY_WORKERS_MAX;
  const infraOf = (fleet: string): FleetInfra | undefined => infra.find((i) => i.fleet === fleet);
  const workersOf = (fleet: string): number =>
    Math.min(infraOf(fleet)?.workers ?? availableParallelism(), workersMax);
  return fleets.map(({ fleet }) => {
    const address = addresses.get(fleet)!;
    const files = options.tls.fleetFiles(fleet);
    const drainSeconds = infraOf(fleet)?.drainSeconds;
    return {
      fleet,
      address,
      liveness: { host: address, port: PORTS.proxyReady, path: '/live' },
      admin: { host: address, port: HOST_PROXY_PORTS.admin },
      args: hostProxyArgs({
        fleet,
        node: `${fleet}@${address}`,
        address,
        discoveryAddress: options.discoveryAddress,
        caFile: options.tls.caFile,
        certFile: files.cert,
        keyFile: files.key,
        serverName: DISCOVERY_SERVER_NAME,
        traceEvents: options.traceEvents,
        maxWorkers: workersMax,
      }),
      settings: hostProxySettings({
        drainSeconds: options.proxyDrainSeconds,
        maxDrainSeconds: drainSeconds,
        workers: workersOf(fleet),
        fleet: infraOf(fleet),
      }),
    };
  });
}

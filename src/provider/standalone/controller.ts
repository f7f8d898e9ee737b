// The standalone controller: resource files → the runner → discovery, host proxy processes and the admin
// API. This file is wiring; the pipeline is the runner's (src/runner/).
import type { PorticoGatewayConfig } from '../../api/controller-config.js';
import { buildSnapshot, type ResourceSnapshot } from '../../api/snapshot.js';
import type { FleetCertificateLifetime } from '../../certificates/fleet-certificate-lifetime.js';
import { createDiscoveryServer, type DiscoveryServer } from '../../discovery/server.js';
import type { AddressPool } from '../../infra/host/address-pool.js';
import type { FleetInfra } from '../../ir/fleet-infra.js';
import { formatHostPort, parseHostPort } from '../../platform/host-port.js';
import { requireLoopback } from '../../platform/listen-scope.js';
import type { Logger } from '../../platform/log-line.js';
import { logConditionChanges } from '../../runner/condition-changes.js';
import { createRunner, type ResourceSource, type Runner } from '../../runner/runner.js';
import { appendStageTrace, type StageTrace } from '../../trace/propagation-trace.js';
import type { DataPlaneState } from '../../translate/index.js';
import { dataPlaneState } from '../data-plane-state.js';
import { type AdminServer, listenError, startAdminServer } from './admin-server.js';
import { adminView } from './admin-view.js';
import { acquireControllerLock } from './controller-lock.js';
import { type StandaloneDiscoveryTls, standaloneDiscoveryTls } from './discovery-tls.js';
import { fileBatches } from './file-batches.js';
import { watchFiles } from './file-watch.js';
import { createGatewayAnnouncements } from './gateway-announcements.js';
import { type HostFleets, openHostFleets, proxySpecs } from './host-fleets.js';
import { type ReservedPortPublisher, reservedPortPublisher } from './reserved-port-publisher.js';
import type { ResourceStore } from './resource-store.js';
import { openResourceStore } from './resource-store.js';
import { reuseUnchangedLists } from './snapshot-reuse.js';

export { DEFAULT_PROXY_WORKERS_MAX } from './host-fleets.js';

export interface StandaloneOptions {
  config: PorticoGatewayConfig;
  /** Resource files and directories. */
  paths: string[];
  stateDir: string;
  adminAddress: string;
  discoveryAddress: string;
  /** Listen on a non-loopback admin or discovery address: asked for by name, never a default. */
  allowRemoteAdmin?: boolean;
  allowRemoteDiscovery?: boolean;
  /** CIDR the fleets' loopback addresses come from. */
  addressPool: string;
  /** Where addresses are claimed host-wide (shared by every controller on the host); default in the tmp dir. */
  addressClaimsDir?: string;
  controllerNamespace: string;
  /** One line per event a person should see. */
  log: Logger;
  /** The discovery server's lines; absent: `log`. */
  discoveryLog?: Logger;
  /** Overrides for tests: the proxy entry point and its timings. */
  proxyEntryPoint?: string;
  proxyDrainSeconds?: number;
  proxyStopGraceMs?: number;
  /** Most worker processes per proxy (default 4): a fleet gets its DataPlaneProxy's workers or the CPUs, up to this. */
  proxyWorkersMax?: number;
  /** Diagnostics: the controller and the proxies it starts append stage timestamps of every edit to this file. */
  traceEvents?: string;
  /** The fleets' client certificate lifetime and renewal grace (default 7 days, 5 minutes). */
  fleetCertificates?: FleetCertificateLifetime;
}

export interface StandaloneController {
  adminAddress: string;
  discoveryAddress: string;
  /**
   * Stops the controller. `stopProxies`: drain and stop the proxies too; otherwise they keep serving their
   * last config, recorded in the state directory for the next controller to adopt.
   */
  close(options?: { stopProxies?: boolean }): Promise<void>;
}

/** Both addresses are checked before anything starts (the admin server checks its own again). */
function requireLocalAddresses(options: StandaloneOptions): void {
  requireLoopback(
    parseHostPort(options.adminAddress, '--admin-address'),
    '--admin-address',
    'the admin API has no authentication',
    '--allow-remote-admin',
    options.allowRemoteAdmin === true,
  );
  requireLoopback(
    parseHostPort(options.discoveryAddress, '--discovery-address'),
    '--discovery-address',
    'only the proxies on this machine need config discovery',
    '--allow-remote-discovery',
    options.allowRemoteDiscovery === true,
  );
}

/** The store's objects as snapshots, and what the host proxies report about them. */
function fileSource(
  store: ResourceStore,
  host: HostFleets,
  discovery: DiscoveryServer,
  publisher: ReservedPortPublisher,
): ResourceSource {
  let previous: ResourceSnapshot | undefined;
  return {
    snapshot() {
      previous = reuseUnchangedLists(previous, buildSnapshot(store.objects()));
      return previous;
    },
    dataPlane(fleets): DataPlaneState {
      // A proxy counts only while its process runs and answers its liveness probe: Programmed follows what it
      // serves, not what it once acknowledged (a drained or hung proxy stays connected, or looks so, for a while).
      const serving = new Set(
        host.supervisor
          .list()
          .filter((p) => p.state === 'running' && p.health !== 'failing')
          .map((p) => p.fleet),
      );
      const nodes = discovery.nodes().filter((n) => serving.has(n.fleet));
      const state = dataPlaneState(fleets, nodes, (fleet) => {
        const address = host.pool.get(fleet);
        return address === undefined ? [] : [{ type: 'IPAddress', value: address }];
      });
      // Listeners kept off the host proxy's own ports count as listener errors, like a failed bind.
      for (const [fleet, errors] of publisher.errors()) state.fleets[fleet]?.listenerErrors.push(...errors);
      return state;
    },
  };
}

interface StandaloneParts {
  store: ResourceStore;
  host: HostFleets;
  discovery: DiscoveryServer;
  discoveryAddress: string;
  tls: StandaloneDiscoveryTls;
  trace: StageTrace | undefined;
}

/** The runner fed by the files, publishing to discovery, running host proxies, announcing Gateways. */
function createStandaloneRunner(options: StandaloneOptions, parts: StandaloneParts): Runner {
  const { host, discoveryAddress, tls } = parts;
  const { log } = options;
  const publisher = reservedPortPublisher(parts.discovery);
  const announcements = createGatewayAnnouncements(log);
  const runner = createRunner({
    translate: {
      controllerName: options.config.gateway.controllerName,
      controllerNamespace: options.controllerNamespace,
      deployType: 'ControllerNamespace',
    },
    source: fileSource(parts.store, host, parts.discovery, publisher),
    discovery: publisher,
    infra: {
      async apply(result, dataPlane) {
        const moved = holdRequestedAddresses(host.pool, result.infra);
        const addresses = host.pool.assign(result.fleets.map((f) => f.fleet));
        host.supervisor.sync(
          proxySpecs(result.fleets, result.infra, addresses, { ...options, discoveryAddress, tls }),
        );
        // A fleet that went takes its client certificate with it: discovery refuses it from now on.
        tls.retain(result.fleets.map((f) => f.fleet));
        await host.pool.save();
        // Reserved ports, or a new fleet's address, were unknown to this translation: translate once more.
        const newFleet = result.fleets.some((f) => dataPlane.fleets[f.fleet] === undefined);
        return { learnt: publisher.takeChanged() || newFleet || moved };
      },
    },
    statuses: { show: () => announcements.announce(runner.statuses().values()) },
    // Gateways have their own lines here (gateway-announcements.ts: programmed at an address, or why not).
    onConditionChanges: (changes) =>
      logConditionChanges(
        log,
        changes.filter((c) => c.kind !== 'Gateway'),
      ),
    onError: (error) =>
      log.error(
        `reconcile failed, the last good state keeps serving: ${(error as Error).stack ?? String(error)}`,
      ),
    trace: parts.trace,
  });
  return runner;
}

export async function startStandalone(options: StandaloneOptions): Promise<StandaloneController> {
  // What started so far, undone in reverse when a later step fails: a missing path or a taken port must end
  // the command, not leave it holding the discovery port and the state dir's lock.
  const undo: (() => unknown)[] = [];
  try {
    return await startParts(options, undo);
  } catch (error) {
    for (const step of undo.reverse()) {
      try {
        await step();
      } catch {
        // Undoing the rest matters more than why one part would not stop.
      }
    }
    throw error;
  }
}

async function startParts(
  options: StandaloneOptions,
  undo: (() => unknown)[],
): Promise<StandaloneController> {
  const { log, config } = options;
  const controllerName = config.gateway.controllerName;
  requireLocalAddresses(options);
  const trace = options.traceEvents === undefined ? undefined : appendStageTrace(options.traceEvents);
  const lock = acquireControllerLock(options.stateDir);
  undo.push(() => lock.release());
  const tls = await standaloneDiscoveryTls(options.stateDir, options.controllerNamespace, {
    log,
    ...(options.fleetCertificates === undefined ? {} : { lifetime: options.fleetCertificates }),
  });
  undo.push(() => tls.close());
  const discovery: DiscoveryServer = createDiscoveryServer({
    address: options.discoveryAddress,
    tls: tls.server,
    auth: { mode: 'mtls', certificates: tls.certificates },
    trace,
    log: options.discoveryLog ?? log,
  });
  const { port: discoveryPort } = await discovery.start().catch((error: Error) => {
    const cause = error.cause as NodeJS.ErrnoException | undefined;
    throw cause?.code === undefined
      ? error
      : listenError('--discovery-address', options.discoveryAddress, cause);
  });
  undo.push(() => discovery.close());
  const discoveryAddress = formatHostPort({
    ...parseHostPort(options.discoveryAddress, '--discovery-address'),
    port: discoveryPort,
  });

  // Proxy Acks and process changes only move statuses: they settle for a moment into one translation.
  let runner: Runner | undefined;
  const dataPlaneChanged = (): void => runner?.settle();
  const host = await openHostFleets({ ...options, onChange: dataPlaneChanged });
  // Proxies adopted from an earlier run keep serving: this one only stops watching them.
  undo.push(() => host.supervisor.detach());
  const store = await openResourceStore({ stateDir: options.stateDir });
  const started = createStandaloneRunner(options, { store, host, discovery, discoveryAddress, tls, trace });
  runner = started;
  undo.push(() => started.stop());
  discovery.on('change', dataPlaneChanged);

  // Before the files are read (the first pass starts proxies): a taken admin address must start none.
  const admin: AdminServer = await startAdminServer({
    address: options.adminAddress,
    source: '--admin-address',
    allowRemote: options.allowRemoteAdmin === true,
    getState: () => adminView({ runner: started, store, discovery, ...host }),
  });
  undo.push(() => admin.close());
  const batches = fileBatches(store, started, options.paths, log, trace);
  undo.push(() => batches.close());
  const watcher = await watchFiles({
    paths: options.paths,
    onBatch: (batch) => batches.apply(batch),
    onError: (error) => log.error(error.message),
    trace,
  });
  undo.push(() => watcher.close());
  log.info(
    `controller ${controllerName}: admin API on http://${admin.address}, discovery on ${discoveryAddress}`,
  );

  return {
    adminAddress: admin.address,
    discoveryAddress,
    async close(closeOptions = {}) {
      started.stop();
      discovery.off('change', dataPlaneChanged);
      await watcher.close();
      batches.close();
      // Proxies drain first (requests in flight finish), then the servers they talk to go away.
      if (closeOptions.stopProxies === true) await host.supervisor.stopAll();
      else host.supervisor.detach();
      tls.close();
      await Promise.all([discovery.close(), admin.close()]);
      await Promise.all([store.save(), host.pool.save()]);
      // Proxies left serving keep their addresses claimed; stopped ones free them for other controllers.
      if (closeOptions.stopProxies === true) host.claims.releaseAll();
      lock.release();
    },
  };
}

/**
 * Gives each fleet whose Gateway asks for an address in spec.addresses that loopback address, when it is one of the
 * pool's and no other serving fleet holds it (else the fleet keeps its own, and the Gateway says AddressNotUsable).
 * True when a fleet's address changed: its proxy moves there, and the statuses are made again.
 */
function holdRequestedAddresses(pool: AddressPool, infra: readonly FleetInfra[]): boolean {
  let moved = false;
  for (const i of infra) {
    if (i.requestedAddress === undefined || pool.get(i.fleet) === i.requestedAddress) continue;
    pool.hold(i.fleet, i.requestedAddress);
    if (pool.get(i.fleet) === i.requestedAddress) moved = true;
  }
  return moved;
}

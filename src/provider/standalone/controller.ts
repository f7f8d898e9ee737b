import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { formatResourceError, type ResourceError } from '../../api/common.js';
import { stampConditionTimes } from '../../api/condition-times.js';
import type { PorticoGatewayConfig } from '../../api/controller-config.js';
import { describeObject } from '../../api/kinds.js';
import { buildSnapshot, type ResourceSnapshot } from '../../api/snapshot.js';
import { createDiscoveryServer, type DiscoveryServer } from '../../discovery/server.js';
import { formatHostPort, parseHostPort } from '../../host-port.js';
import { DEFAULT_CLAIMS_DIR, openAddressClaims } from '../../infra/host/address-claims.js';
import { openAddressPool } from '../../infra/host/address-pool.js';
import { HOST_PROXY_PORTS, hostProxyArgs } from '../../infra/host/proxy-args.js';
import { PROXY_RECORDS_DIR } from '../../infra/host/proxy-records.js';
import { type ReservedPortError, withoutReservedPorts } from '../../infra/host/reserved-ports.js';
import { createProxySupervisor, formatProxyLogLine } from '../../infra/host/supervisor.js';
import type { FleetConfig } from '../../ir/fleet-config.js';
import { requireLoopback } from '../../listen-scope.js';
import { traceStage } from '../../trace/propagation-trace.js';
import {
  createTranslateCache,
  type DataPlaneState,
  type ObjectStatus,
  translate,
} from '../../translate/index.js';
import { dataPlaneState } from '../data-plane-state.js';
import { type AdminServer, startAdminServer } from './admin-server.js';
import {
  type AdminState,
  type FleetState,
  LOAD_ERRORS_ANNOTATION,
  type ResourceObject,
} from './admin-state.js';
import { acquireControllerLock } from './controller-lock.js';
import { standaloneDiscoveryTls } from './discovery-tls.js';
import { watchFiles } from './file-watch.js';
import { adoptableProxies } from './proxy-adoption.js';
import { openResourceStore } from './resource-store.js';
import { reuseUnchangedLists } from './snapshot-reuse.js';
import { runsOnAddress } from './state-dir-activity.js';

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
  log: (line: string) => void;
  /** Overrides for tests: the proxy entry point and its timings. */
  proxyEntryPoint?: string;
  proxyDrainSeconds?: number;
  proxyStopGraceMs?: number;
  /** Most worker processes per proxy (default 4): a fleet gets its DataPlaneProxy's workers or the CPUs, up to this. */
  proxyWorkersMax?: number;
}

export const DEFAULT_PROXY_WORKERS_MAX = 4;

export interface StandaloneController {
  adminAddress: string;
  discoveryAddress: string;
  /**
   * Stops the controller. `stopProxies`: drain and stop the proxies too; otherwise they keep serving their
   * last config, recorded in the state directory for the next controller to adopt.
   */
  close(options?: { stopProxies?: boolean }): Promise<void>;
}

const STORE_SAVE_INTERVAL_MS = 1000;
// Moves of one fleet to another address after "address in use", per run.
const MAX_ADDRESS_MOVES = 3;
const DATA_PLANE_SETTLE_MS = 100;

// Reasons that only mean "the proxy is on its way", not a problem to report.
const WAITING = new Set(['Pending', 'AddressNotAssigned']);

interface StatusCondition {
  type: string;
  status: string;
  reason: string;
  message: string;
}

function statusKey(s: { kind: string; namespace?: string; name: string }): string {
  return s.namespace === undefined ? `${s.kind} ${s.name}` : `${s.kind} ${s.namespace}/${s.name}`;
}

export async function startStandalone(options: StandaloneOptions): Promise<StandaloneController> {
  const { log, config } = options;
  const controllerName = config.gateway.controllerName;
  // Both addresses are checked before anything starts (the admin server checks its own again).
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
  const lock = acquireControllerLock(options.stateDir);
  const tls = await standaloneDiscoveryTls(options.stateDir, options.controllerNamespace);

  const discovery: DiscoveryServer = createDiscoveryServer({
    address: options.discoveryAddress,
    tls: tls.server,
    auth: { mode: 'mtls' },
    log: (level, message) => {
      if (level === 'warn' || level === 'error') log(`discovery ${level}: ${message}`);
    },
  });
  const { port: discoveryPort } = await discovery.start();
  const discoveryAddress = formatHostPort({
    ...parseHostPort(options.discoveryAddress, '--discovery-address'),
    port: discoveryPort,
  });

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
    onWarning: (m) => log(`warning: ${m}`),
    claims,
  });
  // Proxies a previous controller left running (it crashed, or stopped without stopping them) keep serving:
  // adopted, they keep their addresses and are reconnected to this discovery server at once.
  const recordsDir = join(options.stateDir, PROXY_RECORDS_DIR);
  const adoptable = await adoptableProxies(recordsDir, log);
  for (const record of adoptable) pool.hold(record.fleet, record.address);

  let reconcileSoon: () => void = () => {};
  const addressMoves = new Map<string, number>();
  const supervisor = createProxySupervisor({
    entryPoint: options.proxyEntryPoint,
    logDir: join(options.stateDir, 'logs'),
    recordsDir,
    stopGraceMs: options.proxyStopGraceMs,
    log: (line) => log(formatProxyLogLine(line)),
    onChange: () => reconcileSoon(),
    onAddressInUse: (fleet, address) => {
      // Something that is not ours binds there; a few moves find a free address, more mean a wildcard bind.
      const moved = (addressMoves.get(fleet) ?? 0) + 1;
      addressMoves.set(fleet, moved);
      if (moved > MAX_ADDRESS_MOVES) {
        log(
          `error: fleet ${fleet}: ${address} is in use too, after ${MAX_ADDRESS_MOVES} moves; is something bound to ` +
            `0.0.0.0 on the proxy ports (${Object.values(HOST_PROXY_PORTS).join(', ')})? Retrying there`,
        );
        return;
      }
      pool.avoid(address);
      log(`warning: fleet ${fleet}: ${address} is in use by another process; moving it to another address`);
      reconcileSoon();
    },
  });
  // Their discovery clients wait out a backoff of up to 30 s: adopting sends SIGHUP, which reconnects them now.
  supervisor.adopt(adoptable);
  for (const record of adoptable)
    log(`adopted proxy ${record.fleet} (pid ${record.pid}) on ${record.address}`);
  const store = await openResourceStore({ stateDir: options.stateDir });
  const cache = createTranslateCache();

  let fleets: FleetConfig[] = [];
  let previousSnapshot: ResourceSnapshot | undefined;
  // Listeners left out of a fleet's config because the host proxy's own ports use them, by fleet.
  let reservedErrors = new Map<string, ReservedPortError[]>();
  const statuses = new Map<string, ObjectStatus>();
  // The translator's statuses before stamping, by object: what `statuses` was stamped from, and its JSON.
  const rawStatuses = new Map<
    string,
    { object: ObjectStatus; status: Record<string, unknown>; json: string }
  >();
  const statusKeys = new WeakMap<ObjectStatus, string>();
  let ready = false;
  const programmedAnnounced = new Map<string, string>();

  function currentDataPlane(): DataPlaneState {
    // A proxy counts only while its process runs and answers its liveness probe: Programmed follows what it
    // serves, not what it once acknowledged (a drained or hung proxy stays connected, or looks so, for a while).
    const serving = new Set(
      supervisor
        .list()
        .filter((p) => p.state === 'running' && p.health !== 'failing')
        .map((p) => p.fleet),
    );
    const nodes = discovery.nodes().filter((n) => serving.has(n.fleet));
    const state = dataPlaneState(fleets, nodes, (fleet) => {
      const address = pool.get(fleet);
      return address === undefined ? [] : [{ type: 'IPAddress', value: address }];
    });
    // Listeners kept off the host proxy's own ports count as listener errors, like a failed bind.
    for (const [fleet, errors] of reservedErrors) state.fleets[fleet]?.listenerErrors.push(...errors);
    return state;
  }

  function announce(next: Map<string, ObjectStatus>): void {
    for (const [key, s] of next) {
      if (s.kind !== 'Gateway') continue;
      const status = s.status as {
        conditions?: StatusCondition[];
        addresses?: { value: string }[];
        listeners?: { name: string; conditions?: StatusCondition[] }[];
      };
      const programmed = status.conditions?.find((c) => c.type === 'Programmed');
      const line =
        programmed?.status === 'True'
          ? `Gateway ${s.namespace}/${s.name} programmed at ${status.addresses?.[0]?.value ?? '?'}`
          : `Gateway ${s.namespace}/${s.name} not programmed: ${programmed?.reason ?? 'Unknown'}: ${programmed?.message ?? ''}`;
      const listenerProblems = (status.listeners ?? []).flatMap((l) =>
        (l.conditions ?? [])
          .filter((c) => c.status !== (c.type === 'Conflicted' ? 'False' : 'True') && !WAITING.has(c.reason))
          .map((c) => `  listener ${l.name}: ${c.type}=${c.status}: ${c.reason}: ${c.message}`),
      );
      const text = [line, ...listenerProblems].join('\n');
      // Only transitions are news; a Gateway waiting for its first proxy is not worth a line.
      if (programmedAnnounced.get(key) === text) continue;
      const waiting =
        programmed !== undefined && WAITING.has(programmed.reason) && listenerProblems.length === 0;
      if (waiting && programmedAnnounced.get(key) === undefined) continue;
      programmedAnnounced.set(key, text);
      // One call per line: the log escapes line breaks inside a line (quoted values must not forge lines).
      for (const l of [line, ...listenerProblems]) log(l);
    }
    for (const key of programmedAnnounced.keys()) if (!next.has(key)) programmedAnnounced.delete(key);
  }

  let dataPlaneTimer: NodeJS.Timeout | undefined;
  let running = false;
  let again = false;
  let closed = false;
  async function reconcile(): Promise<void> {
    if (closed) return;
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        clearTimeout(dataPlaneTimer);
        dataPlaneTimer = undefined;
        const snapshot = reuseUnchangedLists(previousSnapshot, buildSnapshot(store.objects()));
        previousSnapshot = snapshot;
        traceStage('snapshot');
        const dataPlane = currentDataPlane();
        const result = translate(
          snapshot,
          {
            controllerName,
            controllerNamespace: options.controllerNamespace,
            deployType: 'ControllerNamespace',
            cache,
          },
          dataPlane,
        );
        traceStage('translated');
        const previousFleets = new Set(fleets.map((f) => f.fleet));
        const nextReserved = new Map<string, ReservedPortError[]>();
        for (const fleet of result.fleets) {
          const served = withoutReservedPorts(fleet);
          if (served.errors.length > 0) nextReserved.set(fleet.fleet, served.errors);
          discovery.setFleet(served.fleet);
          previousFleets.delete(fleet.fleet);
        }
        for (const gone of previousFleets) discovery.removeFleet(gone);
        traceStage('discovery-sent');
        // The discovery stream writes on the next loop turn: let it go out before statuses and processes.
        await new Promise<void>((resolve) => setImmediate(resolve));
        fleets = result.fleets;
        // Reserved-port conditions are data plane facts the translation just learnt: translate once more.
        if (JSON.stringify([...nextReserved]) !== JSON.stringify([...reservedErrors])) again = true;
        reservedErrors = nextReserved;
        // A new fleet's address was unknown to this translation: translate again before reporting status.
        if (result.fleets.some((f) => dataPlane.fleets[f.fleet] === undefined)) again = true;

        const addresses = pool.assign(result.fleets.map((f) => f.fleet));
        const workersMax = options.proxyWorkersMax ?? DEFAULT_PROXY_WORKERS_MAX;
        const workersOf = (fleet: string): number =>
          Math.min(
            result.infra.find((i) => i.fleet === fleet)?.workers ?? availableParallelism(),
            workersMax,
          );
        supervisor.sync(
          result.fleets.map((f) => {
            const address = addresses.get(f.fleet)!;
            return {
              fleet: f.fleet,
              address,
              liveness: { host: address, port: HOST_PROXY_PORTS.ready, path: '/live' },
              args: hostProxyArgs({
                fleet: f.fleet,
                node: `${f.fleet}@${address}`,
                address,
                discoveryAddress,
                caFile: tls.caFile,
                certFile: tls.fleetFiles(f.fleet).cert,
                keyFile: tls.fleetFiles(f.fleet).key,
                serverName: 'portico-gateway',
                drainSeconds: options.proxyDrainSeconds,
                workers: workersOf(f.fleet),
              }),
            };
          }),
        );
        await pool.save();

        const now = new Date();
        // Updated in place: an edit touches its own objects' statuses, not a thousand map entries.
        let known = 0;
        for (const s of result.statuses) {
          let key = statusKeys.get(s);
          if (key === undefined) {
            key = statusKey(s);
            statusKeys.set(s, key);
          }
          const before = rawStatuses.get(key);
          if (before !== undefined) known++;
          // The translator hands back the same object for an unchanged route: nothing to stamp or compare.
          if (before?.object === s) continue;
          // Otherwise the text is compared, so an equal status keeps its condition times.
          const raw =
            before?.status === s.status
              ? { ...before, object: s }
              : { object: s, status: s.status, json: JSON.stringify(s.status) };
          rawStatuses.set(key, raw);
          const previous = statuses.get(key);
          if (previous === undefined || before?.json !== raw.json) {
            statuses.set(key, { ...s, status: stampConditionTimes(previous?.status, s.status, now) });
          }
        }
        // Some objects of last time have no status now: drop theirs (rare, so only then build the key set).
        if (known < rawStatuses.size - (result.statuses.length - known)) {
          const current = new Set(result.statuses.map((s) => statusKeys.get(s)));
          for (const key of [...rawStatuses.keys()]) {
            if (current.has(key)) continue;
            rawStatuses.delete(key);
            statuses.delete(key);
          }
        }
        traceStage('statuses');
        ready = true;
        announce(statuses);
      } while (again && !closed);
    } catch (error) {
      log(
        `error: reconcile failed, the last good state keeps serving: ${(error as Error).stack ?? String(error)}`,
      );
    } finally {
      running = false;
    }
  }
  // Proxy ACKs and process changes only move statuses: they are gathered for a moment into one translation,
  // and a file edit's translation (which reads the data plane afresh) makes a pending one unnecessary.
  reconcileSoon = () => {
    if (dataPlaneTimer !== undefined || closed) return;
    dataPlaneTimer = setTimeout(() => {
      dataPlaneTimer = undefined;
      void reconcile();
    }, DATA_PLANE_SETTLE_MS);
  };
  discovery.on('change', reconcileSoon);

  const reportErrors = (errors: ResourceError[]) => {
    for (const e of errors) log(`error: ${formatResourceError(e)}`);
  };

  // Object metadata (uid, creation time, generation) is for restarts: written at most once a second, off
  // the path from a file edit to the proxies, and on close.
  let saveTimer: NodeJS.Timeout | undefined;
  const saveStore = (): void => {
    saveTimer = undefined;
    store
      .save()
      .catch((error: unknown) => log(`error: cannot save object metadata: ${(error as Error).message}`));
  };
  const saveStoreSoon = (): void => {
    saveTimer ??= setTimeout(saveStore, STORE_SAVE_INTERVAL_MS);
  };

  let firstBatch = true;
  const watcher = await watchFiles({
    paths: options.paths,
    onBatch: async (batch) => {
      const result = store.apply(batch);
      traceStage('parsed');
      reportErrors(result.errors);
      if (firstBatch) {
        firstBatch = false;
        const counts = new Map<string, number>();
        for (const o of store.objects()) counts.set(o.kind, (counts.get(o.kind) ?? 0) + 1);
        const summary = [...counts].map(([kind, n]) => `${n} ${kind}`).join(', ');
        log(`loaded ${summary || 'no objects'} from ${options.paths.join(', ')}`);
      } else if (result.changed) {
        const files = [...batch.changed.keys(), ...batch.removed].join(', ');
        // Written once the config is on its way (the reconcile yields after sending), still before its statuses.
        setImmediate(() => log(`applied changes from ${files}`));
      }
      if (result.changed || !ready) await reconcile();
      saveStoreSoon();
    },
    onError: (error) => log(`error: ${error.message}`),
  });

  const admin: AdminServer = await startAdminServer({
    address: options.adminAddress,
    source: '--admin-address',
    allowRemote: options.allowRemoteAdmin === true,
    getState: (): AdminState => adminState(),
  });

  function adminState(): AdminState {
    const broken = store.objectErrors();
    const resources: ResourceObject[] = store.objects().map((o) => {
      const s = statuses.get(describeObject(o));
      let object = o as ResourceObject & { status?: unknown };
      // The object serves its last good content; say so on it, as long as its file is broken.
      const errors = broken.get(o);
      if (errors !== undefined) {
        const annotations = {
          ...object.metadata.annotations,
          [LOAD_ERRORS_ANNOTATION]: errors.map(formatResourceError).join('\n'),
        };
        object = { ...object, metadata: { ...object.metadata, annotations } };
      }
      return s === undefined ? object : { ...object, status: s.status };
    });
    const nodes = discovery.nodes();
    const processes = new Map(supervisor.list().map((p) => [p.fleet, p]));
    const fleetStates: FleetState[] = fleets.map((config) => {
      const p = processes.get(config.fleet);
      return {
        fleet: config.fleet,
        address: pool.get(config.fleet),
        config,
        nodes: nodes
          .filter((n) => n.fleet === config.fleet)
          .map((n) => ({
            node: n.node,
            appliedVersion: n.appliedVersion,
            error: n.lastError,
            connectedAt: n.connectedAt,
          })),
        process:
          p === undefined
            ? undefined
            : {
                pid: p.pid,
                state: p.state,
                adopted: p.adopted,
                restarts: p.restarts,
                lastExit: p.lastExit,
                health: p.health,
                healthError: p.healthError,
              },
      };
    });
    return { ready, resources, fleets: fleetStates, errors: store.errors() };
  }

  log(`controller ${controllerName}: admin API on http://${admin.address}, discovery on ${discoveryAddress}`);

  return {
    adminAddress: admin.address,
    discoveryAddress,
    async close(closeOptions = {}) {
      closed = true;
      clearTimeout(dataPlaneTimer);
      discovery.off('change', reconcileSoon);
      await watcher.close();
      clearTimeout(saveTimer);
      // Proxies drain first (requests in flight finish), then the servers they talk to go away.
      if (closeOptions.stopProxies === true) await supervisor.stopAll();
      else supervisor.detach();
      await Promise.all([discovery.close(), admin.close()]);
      await Promise.all([store.save(), pool.save()]);
      // Proxies left serving keep their addresses claimed; stopped ones free them for other controllers.
      if (closeOptions.stopProxies === true) claims.releaseAll();
      lock.release();
    },
  };
}

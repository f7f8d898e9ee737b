// The admin API's view of a running standalone controller: each object with its status (and its file's
// errors while the file is broken), and each fleet with its address, proxies and supervised process.
import { formatResourceError } from '../../api/common.js';
import { describeObject } from '../../api/kinds.js';
import type { DiscoveryServer } from '../../discovery/server.js';
import type { AddressPool } from '../../infra/host/address-pool.js';
import type { ProxyProcessInfo, ProxySupervisor } from '../../infra/host/supervisor.js';
import type { FleetConfig } from '../../ir/fleet-config.js';
import type { Runner } from '../../runner/runner.js';
import {
  type AdminState,
  type FleetProcessState,
  type FleetState,
  LOAD_ERRORS_ANNOTATION,
  type ResourceObject,
} from './admin-state.js';
import type { ResourceStore } from './resource-store.js';

export interface AdminViewSources {
  runner: Runner;
  store: ResourceStore;
  discovery: DiscoveryServer;
  supervisor: ProxySupervisor;
  pool: AddressPool;
}

export function adminView(sources: AdminViewSources): AdminState {
  const { runner, store } = sources;
  return {
    ready: runner.ready(),
    resources: resourcesWithStatus(store, runner.statuses()),
    fleets: fleetStates(sources, runner.fleets()),
    errors: store.errors(),
  };
}

function resourcesWithStatus(
  store: ResourceStore,
  statuses: ReturnType<Runner['statuses']>,
): ResourceObject[] {
  const broken = store.objectErrors();
  return store.objects().map((o) => {
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
}

function fleetStates(sources: AdminViewSources, fleets: readonly FleetConfig[]): FleetState[] {
  const nodes = sources.discovery.nodes();
  const processes = new Map(sources.supervisor.list().map((p) => [p.fleet, p]));
  return fleets.map((config) => ({
    fleet: config.fleet,
    address: sources.pool.get(config.fleet),
    config,
    nodes: nodes
      .filter((n) => n.fleet === config.fleet)
      .map((n) => ({
        node: n.node,
        appliedVersion: n.appliedVersion,
        error: n.lastError,
        connectedAt: n.connectedAt,
      })),
    process: processState(processes.get(config.fleet)),
  }));
}

function processState(p: ProxyProcessInfo | undefined): FleetProcessState | undefined {
  if (p === undefined) return undefined;
  return {
    pid: p.pid,
    state: p.state,
    adopted: p.adopted,
    restarts: p.restarts,
    lastExit: p.lastExit,
    health: p.health,
    healthError: p.healthError,
  };
}

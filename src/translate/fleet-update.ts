// The incremental fleet build: when a fleet's Gateways, listeners and secrets are the same objects as last
// time, only the attached routes that changed are undone and redone, and only their VirtualHosts rebuilt.
// Routes with a wildcard (or no) hostname touch many VirtualHosts: those edits take the full build.
import type { FleetConfig, FleetResourceType, VirtualHost } from '../ir/fleet-config.js';
import type { FleetConfigChange } from '../ir/fleet-config-patch.js';
import { insertionIndex } from '../platform/sorted-search.js';
import type { FleetBuildState, HostState, PortState, RouteEntry } from './fleet-build-state.js';
import {
  byName,
  type FleetInput,
  fleetClusters,
  hostOwner,
  hostVirtualHost,
  routeEntry,
  sameItems,
} from './fleet-hosts.js';
import { covers, effectiveHostnames, isWildcard } from './hostnames.js';
import type { ListenerState } from './listeners.js';
import type { RouteState } from './routes.js';
import type { TranslateMemos } from './types.js';

interface Added {
  listener: number;
  rs: RouteState;
  hostnames: string[];
}

interface Removed {
  listener: number;
  entry: RouteEntry;
}

/** An update under way: the state it edits in place and what the edit touched. */
interface Update {
  state: FleetBuildState;
  listeners: ListenerState[];
  /** VirtualHosts whose routes changed, with their port. */
  touched: Map<HostState, PortState>;
  /** A cluster name gained its first reference or lost its last. */
  clustersChanged: boolean;
}

const exactOnly = (hostnames: readonly string[]): boolean =>
  hostnames.every((h) => h !== '*' && !isWildcard(h));

/**
 * The fleet config after the attached routes' changes, updating `state` in place; undefined (state untouched)
 * when the change needs the full build. Precondition: `state.frame` equals the current frame.
 */
export function updateFleet(
  state: FleetBuildState,
  input: FleetInput,
  listeners: ListenerState[],
): FleetConfig | undefined {
  if (state.entries.length !== listeners.length) return undefined;
  // Listener filters name clusters and depend on Services this path does not follow: always a full build.
  if (listeners.some((l) => l.requestFilters !== undefined)) return undefined;
  const changes = routeChanges(state, input, listeners);
  if (changes === undefined) return undefined;
  const { removed, added } = changes;
  // A translation that names its changed routes kept every cluster object (same lookup): no need to look.
  const sameClusters = input.changed !== undefined || sameClusterObjects(state, input);
  if (removed.length === 0 && added.length === 0 && sameClusters) return state.config;

  const update: Update = { state, listeners, touched: new Map(), clustersChanged: false };
  for (const { listener, entry } of removed) undoEntry(update, listener, entry);
  for (const a of added) addEntry(update, a);

  const previous = state.config;
  const hosts = rebuildTouchedHosts(update, previous.virtualHosts, input.memos.rankedRoutes);

  let { clusters, endpoints } = previous;
  if (update.clustersChanged || !sameClusters) {
    const next = fleetClusters([...state.clusterRefs.keys()], input.clusters);
    if (!sameItems(next.clusters, clusters)) clusters = next.clusters;
    if (!sameItems(next.endpoints, endpoints)) endpoints = next.endpoints;
    state.clusterObjects = next.objects;
  }

  if (
    hosts.changed.length === 0 &&
    hosts.removed.length === 0 &&
    clusters === previous.clusters &&
    endpoints === previous.endpoints
  ) {
    return previous;
  }
  const config: FleetConfig = {
    ...previous,
    virtualHosts:
      hosts.changed.length + hosts.removed.length > 0 ? hosts.virtualHosts! : previous.virtualHosts,
    clusters,
    endpoints,
  };
  state.change = configChange(previous, config, hosts);
  state.config = config;
  return config;
}

/** Which resources `config` changed from `previous`: the touched VirtualHosts and the cluster lists. */
function configChange(
  previous: FleetConfig,
  config: FleetConfig,
  hosts: { changed: string[]; removed: string[] },
): FleetConfigChange {
  const change: FleetConfigChange = { since: previous, config, changed: [], removed: [] };
  for (const name of hosts.changed) change.changed.push({ type: 'virtualHosts', name });
  for (const name of hosts.removed) change.removed.push({ type: 'virtualHosts', name });
  for (const type of ['clusters', 'endpoints'] as const) {
    if (previous[type] !== config[type]) namedDifferences(type, previous[type], config[type], change);
  }
  return change;
}

/** The names whose object differs between two lists sorted by name (the rarer cluster changes). */
function namedDifferences(
  type: FleetResourceType,
  before: readonly { name: string }[],
  after: readonly { name: string }[],
  change: FleetConfigChange,
): void {
  const was = new Map(before.map((item) => [item.name, item]));
  for (const item of after) {
    if (was.get(item.name) !== item) change.changed.push({ type, name: item.name });
    was.delete(item.name);
  }
  for (const name of was.keys()) change.removed.push({ type, name });
}

/**
 * The entries to undo and the routes to add, per listener; undefined when a changed route has a wildcard
 * (or no) hostname, which touches many VirtualHosts: the full build does those.
 */
function routeChanges(
  state: FleetBuildState,
  input: FleetInput,
  listeners: ListenerState[],
): { removed: Removed[]; added: Added[] } | undefined {
  const found =
    input.changed === undefined
      ? scannedChanges(state, input, listeners)
      : knownChanges(state, input, listeners, input.changed);
  for (const { entry } of found.removed) if (!exactOnly(entry.hostnames)) return undefined;
  for (const { hostnames } of found.added) if (!exactOnly(hostnames)) return undefined;
  return found;
}

/** Every attached route compared with last time's entry: what changed. */
function scannedChanges(
  state: FleetBuildState,
  input: FleetInput,
  listeners: ListenerState[],
): { removed: Removed[]; added: Added[] } {
  const removed: Removed[] = [];
  const added: Added[] = [];
  for (const [li, l] of listeners.entries()) {
    const before = state.entries[li]!;
    let kept = 0;
    let changedBefore = 0;
    for (const route of l.attached) {
      const rs = input.routes.get(route);
      if (rs === undefined) continue;
      const entry = before.get(route);
      if (entry !== undefined && entry.rs.backends === rs.backends) {
        kept++;
        continue;
      }
      if (entry !== undefined) {
        removed.push({ listener: li, entry });
        changedBefore++;
      }
      added.push({ listener: li, rs, hostnames: effectiveHostnames(l.spec.hostname, route.spec.hostnames) });
    }
    // Some routes of last time are no longer attached here: find which (rarely needed, so only then).
    if (kept + changedBefore !== before.size) {
      const present = new Set(l.attached.filter((r) => input.routes.has(r)));
      for (const [route, entry] of before) if (!present.has(route)) removed.push({ listener: li, entry });
    }
  }
  return { removed, added };
}

/** The translation says which routes changed (every other one is the same object, state and backends). */
function knownChanges(
  state: FleetBuildState,
  input: FleetInput,
  listeners: ListenerState[],
  changed: NonNullable<FleetInput['changed']>,
): { removed: Removed[]; added: Added[] } {
  const removed: Removed[] = [];
  const added: Added[] = [];
  for (const [li, l] of listeners.entries()) {
    const before = state.entries[li]!;
    for (const route of changed.removed) {
      const entry = before.get(route);
      if (entry !== undefined) removed.push({ listener: li, entry });
    }
    for (const route of changed.added) {
      const rs = input.routes.get(route);
      if (rs === undefined) continue;
      if (!rs.attachedTo.some((a) => a.gatewayKey === l.gatewayKey && a.index === l.index)) continue;
      added.push({ listener: li, rs, hostnames: effectiveHostnames(l.spec.hostname, route.spec.hostnames) });
    }
  }
  return { removed, added };
}

/** The cluster objects the config was built from are still the table's. */
function sameClusterObjects(state: FleetBuildState, input: FleetInput): boolean {
  for (const [name, object] of state.clusterObjects) if (input.clusters.get(name) !== object) return false;
  return true;
}

function portOf(update: Update, li: number): PortState {
  return update.state.ports.get(update.listeners[li]!.spec.port)!;
}

/** An entry's clusters gain or lose a reference (only an entry with targets holds them, unless `force`). */
function countClusters(update: Update, entry: RouteEntry, delta: number, force = false): void {
  if (entry.targets.length === 0 && !force) return;
  const refs = update.state.clusterRefs;
  for (const c of entry.clusters) {
    const n = (refs.get(c) ?? 0) + delta;
    if (n === 0) refs.delete(c);
    else refs.set(c, n);
    if (n === 0 || n === delta) update.clustersChanged = true;
  }
}

/** Takes a route's contribution through one listener away from its VirtualHosts and hostname counts. */
function undoEntry(update: Update, li: number, entry: RouteEntry): void {
  const port = portOf(update, li);
  for (const host of entry.targets) {
    host.contributors.delete(entry.rs.route);
    update.touched.set(host, port);
  }
  for (const h of entry.hostnames) {
    const n = (port.hostRefs.get(h) ?? 0) - 1;
    if (n <= 0) port.hostRefs.delete(h);
    else port.hostRefs.set(h, n);
    const host = port.hosts.get(h);
    if (host !== undefined) update.touched.set(host, port);
  }
  countClusters(update, entry, -1);
  update.state.entries[li]!.delete(entry.rs.route);
}

/** Adds a route through one listener to the VirtualHosts of its exact hostnames, making those that are new. */
function addEntry(update: Update, { listener: li, rs, hostnames }: Added): void {
  const port = portOf(update, li);
  const entry = routeEntry(li, rs, hostnames);
  for (const h of hostnames) {
    port.hostRefs.set(h, (port.hostRefs.get(h) ?? 0) + 1);
    const host = port.hosts.get(h) ?? newHost(update, port, h);
    if (host === undefined) continue;
    update.touched.set(host, port);
    if (host.owner !== li || host.contributors.has(rs.route)) continue;
    host.contributors.set(rs.route, rs);
    entry.targets.push(host);
  }
  countClusters(update, entry, 1);
  update.state.entries[li]!.set(rs.route, entry);
}

/** A VirtualHost for a hostname the port did not serve, or undefined when none of its listeners serves it. */
function newHost(update: Update, port: PortState, h: string): HostState | undefined {
  const owner = hostOwner(port.listeners, update.listeners, h);
  if (owner === undefined) return undefined;
  const listener = port.listener.name;
  const host: HostState = { hostname: h, name: `${listener}/${h}`, listener, owner, contributors: new Map() };
  port.hosts.set(h, host);
  // Unchanged routes of the owner whose wildcard hostname covers the new VirtualHost serve it too.
  for (const w of port.wildcards) {
    if (w.listener !== owner || !w.hostnames.some((e) => e === '*' || covers(e, h))) continue;
    host.contributors.set(w.rs.route, w.rs);
    if (w.targets.length === 0) countClusters(update, w, 1, true);
    w.targets.push(host);
  }
  return host;
}

/**
 * The touched VirtualHosts rebuilt, gone ones removed and new ones inserted in name order: the config's
 * VirtualHost list (undefined when nothing was touched) and the ports whose host list changed.
 */
function rebuildTouchedHosts(
  update: Update,
  previous: VirtualHost[],
  rankedMemo: TranslateMemos['rankedRoutes'],
): { virtualHosts: VirtualHost[] | undefined; changed: string[]; removed: string[] } {
  const changed: string[] = [];
  const removed: string[] = [];
  if (update.touched.size === 0) return { virtualHosts: undefined, changed, removed };
  const virtualHosts = previous.slice();
  for (const [host, port] of update.touched) {
    const gone = !port.hostRefs.has(host.hostname) && !port.listenerHostnames.has(host.hostname);
    if (gone) {
      port.hosts.delete(host.hostname);
      for (const w of port.wildcards) {
        const i = w.targets.indexOf(host);
        if (i === -1) continue;
        w.targets.splice(i, 1);
        if (w.targets.length === 0) countClusters(update, w, -1, true);
      }
      if (host.vhost !== undefined) {
        virtualHosts.splice(insertionIndex(virtualHosts, host.vhost, byName), 1);
        removed.push(host.name);
      }
      continue;
    }
    const before = host.vhost;
    host.vhost = hostVirtualHost(host, before, rankedMemo);
    if (before === undefined) {
      virtualHosts.splice(insertionIndex(virtualHosts, host.vhost, byName), 0, host.vhost);
      changed.push(host.name);
    } else if (host.vhost !== before) {
      virtualHosts[insertionIndex(virtualHosts, host.vhost, byName)] = host.vhost;
      changed.push(host.name);
    }
  }
  return { virtualHosts, changed, removed };
}

// The incremental fleet build: when a fleet's Gateways, listeners and secrets are the same objects as last
// time, only the attached routes that changed are undone and redone, and only their VirtualHosts rebuilt.
// Routes with a wildcard (or no) hostname touch many VirtualHosts: those edits take the full build.
import type { FleetConfig, Listener, VirtualHost } from '../ir/fleet-config.js';
import type { FleetInput } from './fleet.js';
import {
  byName,
  bySpecificity,
  type FleetBuildState,
  fleetClusters,
  type HostState,
  hostOwner,
  hostVirtualHost,
  insertionIndex,
  type PortState,
  type RouteEntry,
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
  const changes = routeChanges(state, input, listeners);
  if (changes === undefined) return undefined;
  const { removed, added } = changes;
  if (removed.length === 0 && added.length === 0 && sameClusterObjects(state, input)) return state.config;

  const update: Update = { state, listeners, touched: new Map(), clustersChanged: false };
  for (const { listener, entry } of removed) undoEntry(update, listener, entry);
  for (const a of added) addEntry(update, a);

  const previous = state.config;
  const { virtualHosts, changedPorts } = rebuildTouchedHosts(
    update,
    previous.virtualHosts,
    input.memos.rankedRoutes,
  );
  const fleetListeners =
    changedPorts.size === 0 ? previous.listeners : updatedListeners(previous.listeners, changedPorts);

  let { clusters, endpoints } = previous;
  if (update.clustersChanged || !sameClusterObjects(state, input)) {
    const next = fleetClusters([...state.clusterRefs.keys()], input.clusters);
    if (!sameItems(next.clusters, clusters)) clusters = next.clusters;
    if (!sameItems(next.endpoints, endpoints)) endpoints = next.endpoints;
    state.clusterObjects = next.objects;
  }

  const nextHosts = virtualHosts !== undefined && !sameItems(virtualHosts, previous.virtualHosts);
  if (
    !nextHosts &&
    fleetListeners === previous.listeners &&
    clusters === previous.clusters &&
    endpoints === previous.endpoints
  ) {
    return previous;
  }
  state.config = {
    ...previous,
    listeners: fleetListeners,
    virtualHosts: nextHosts ? virtualHosts! : previous.virtualHosts,
    clusters,
    endpoints,
  };
  return state.config;
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
      const hostnames = effectiveHostnames(l.spec.hostname, route.spec.hostnames);
      if (!exactOnly(hostnames)) return undefined;
      added.push({ listener: li, rs, hostnames });
    }
    // Some routes of last time are no longer attached here: find which (rarely needed, so only then).
    if (kept + changedBefore !== before.size) {
      const present = new Set(l.attached.filter((r) => input.routes.has(r)));
      for (const [route, entry] of before) if (!present.has(route)) removed.push({ listener: li, entry });
    }
  }
  for (const { entry } of removed) if (!exactOnly(entry.hostnames)) return undefined;
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
  const host: HostState = { hostname: h, name: `port-${port.port}/${h}`, owner, contributors: new Map() };
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
): { virtualHosts: VirtualHost[] | undefined; changedPorts: Set<PortState> } {
  const changedPorts = new Set<PortState>();
  if (update.touched.size === 0) return { virtualHosts: undefined, changedPorts };
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
        port.names.splice(insertionIndex(port.names, host, bySpecificity), 1);
        changedPorts.add(port);
      }
      continue;
    }
    const before = host.vhost;
    host.vhost = hostVirtualHost(host, before, rankedMemo);
    if (before === undefined) {
      virtualHosts.splice(insertionIndex(virtualHosts, host.vhost, byName), 0, host.vhost);
      port.names.splice(insertionIndex(port.names, host, bySpecificity), 0, host);
      changedPorts.add(port);
    } else if (host.vhost !== before) {
      virtualHosts[insertionIndex(virtualHosts, host.vhost, byName)] = host.vhost;
    }
  }
  return { virtualHosts, changedPorts };
}

/** The fleet's Listeners with those of the changed ports listing their VirtualHosts anew. */
function updatedListeners(previous: Listener[], changedPorts: Set<PortState>): Listener[] {
  const fleetListeners = previous.slice();
  for (const port of changedPorts) {
    const listener: Listener = { ...port.listener, virtualHosts: port.names.map((n) => n.name) };
    fleetListeners[insertionIndex(fleetListeners, listener, byName)] = listener;
    port.listener = listener;
  }
  return fleetListeners;
}

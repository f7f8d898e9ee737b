// The incremental fleet build: when a fleet's Gateways, listeners and secrets are the same objects as last
// time, only the attached routes that changed are undone and redone, and only their VirtualHosts rebuilt.
// Routes with a wildcard (or no) hostname touch many VirtualHosts: those edits take the full build.
import type { FleetConfig, Listener, VirtualHost } from '../ir/fleet-config.js';
import type { FleetInput } from './fleet.js';
import {
  byName,
  bySpecificity,
  clustersOf,
  type FleetBuildState,
  fleetClusters,
  type HostState,
  hostOwner,
  hostVirtualHost,
  insertionIndex,
  type PortState,
  type RouteEntry,
  sameItems,
} from './fleet-hosts.js';
import { covers, effectiveHostnames, isWildcard } from './hostnames.js';
import type { ListenerState } from './listeners.js';
import type { RouteState } from './routes.js';

interface Added {
  listener: number;
  rs: RouteState;
  hostnames: string[];
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
  const removed: { listener: number; entry: RouteEntry }[] = [];
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

  const sameClusters = (): boolean => {
    for (const [name, object] of state.clusterObjects) if (input.clusters.get(name) !== object) return false;
    return true;
  };
  if (removed.length === 0 && added.length === 0 && sameClusters()) return state.config;

  const touched = new Map<HostState, PortState>();
  const portOf = (li: number): PortState => state.ports.get(listeners[li]!.spec.port)!;
  let clustersChanged = false;
  const countClusters = (entry: RouteEntry, delta: number, force = false): void => {
    if (entry.targets.length === 0 && !force) return;
    for (const c of entry.clusters) {
      const n = (state.clusterRefs.get(c) ?? 0) + delta;
      if (n === 0) state.clusterRefs.delete(c);
      else state.clusterRefs.set(c, n);
      if (n === 0 || n === delta) clustersChanged = true;
    }
  };

  for (const { listener: li, entry } of removed) {
    const port = portOf(li);
    for (const host of entry.targets) {
      host.contributors.delete(entry.rs.route);
      touched.set(host, port);
    }
    for (const h of entry.hostnames) {
      const n = (port.hostRefs.get(h) ?? 0) - 1;
      if (n <= 0) port.hostRefs.delete(h);
      else port.hostRefs.set(h, n);
      const host = port.hosts.get(h);
      if (host !== undefined) touched.set(host, port);
    }
    countClusters(entry, -1);
    state.entries[li]!.delete(entry.rs.route);
  }

  for (const { listener: li, rs, hostnames } of added) {
    const port = portOf(li);
    const entry: RouteEntry = {
      listener: li,
      rs,
      hostnames,
      targets: [],
      clusters: clustersOf(rs.backends),
    };
    for (const h of hostnames) {
      port.hostRefs.set(h, (port.hostRefs.get(h) ?? 0) + 1);
      let host = port.hosts.get(h);
      if (host === undefined) {
        const owner = hostOwner(port.listeners, listeners, h);
        if (owner === undefined) continue;
        host = { hostname: h, name: `port-${port.port}/${h}`, owner, contributors: new Map() };
        port.hosts.set(h, host);
        // Unchanged routes of the owner whose wildcard hostname covers the new VirtualHost serve it too.
        for (const w of port.wildcards) {
          if (w.listener !== owner || !w.hostnames.some((e) => e === '*' || covers(e, h))) continue;
          host.contributors.set(w.rs.route, w.rs);
          if (w.targets.length === 0) countClusters(w, 1, true);
          w.targets.push(host);
        }
      }
      touched.set(host, port);
      if (host.owner !== li || host.contributors.has(rs.route)) continue;
      host.contributors.set(rs.route, rs);
      entry.targets.push(host);
    }
    countClusters(entry, 1);
    state.entries[li]!.set(rs.route, entry);
  }

  const previous = state.config;
  let virtualHosts: VirtualHost[] | undefined;
  const changedListeners = new Set<PortState>();
  for (const [host, port] of touched) {
    virtualHosts ??= previous.virtualHosts.slice();
    const gone = !port.hostRefs.has(host.hostname) && !port.listenerHostnames.has(host.hostname);
    if (gone) {
      port.hosts.delete(host.hostname);
      for (const w of port.wildcards) {
        const i = w.targets.indexOf(host);
        if (i === -1) continue;
        w.targets.splice(i, 1);
        if (w.targets.length === 0) countClusters(w, -1, true);
      }
      if (host.vhost !== undefined) {
        virtualHosts.splice(insertionIndex(virtualHosts, host.vhost, byName), 1);
        port.names.splice(insertionIndex(port.names, host, bySpecificity), 1);
        changedListeners.add(port);
      }
      continue;
    }
    const before = host.vhost;
    host.vhost = hostVirtualHost(host, before);
    if (before === undefined) {
      virtualHosts.splice(insertionIndex(virtualHosts, host.vhost, byName), 0, host.vhost);
      port.names.splice(insertionIndex(port.names, host, bySpecificity), 0, host);
      changedListeners.add(port);
    } else if (host.vhost !== before) {
      virtualHosts[insertionIndex(virtualHosts, host.vhost, byName)] = host.vhost;
    }
  }

  let fleetListeners = previous.listeners;
  if (changedListeners.size > 0) {
    fleetListeners = previous.listeners.slice();
    for (const port of changedListeners) {
      const listener: Listener = { ...port.listener, virtualHosts: port.names.map((n) => n.name) };
      fleetListeners[insertionIndex(fleetListeners, listener, byName)] = listener;
      port.listener = listener;
    }
  }

  let { clusters, endpoints } = previous;
  if (clustersChanged || !sameClusters()) {
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

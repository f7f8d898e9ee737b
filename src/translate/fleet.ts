// One fleet's FleetConfig from its Gateways' ready listeners and attached routes (src/ir/fleet-config.ts).
// The full build records how it derived each VirtualHost (fleet-hosts.ts); when only attached routes changed,
// the next build redoes just their VirtualHosts (fleet-update.ts), with byte-identical output.

import type { RouteObject } from '../api/route-kinds.js';
import {
  FLEET_CONFIG_SCHEMA_VERSION,
  type FleetConfig,
  type FleetGateway,
  type FleetPolicy,
  type Listener,
  type ListenerProtocol,
  listenerSetFleetName,
  type TlsCertificateChoice,
  type TlsSecret,
  type VirtualHost,
} from '../ir/fleet-config.js';
import { resolveNamedCluster } from './backends.js';
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
import { updateFleet } from './fleet-update.js';
import { compareSpecificity, covers, effectiveHostnames, isWildcard } from './hostnames.js';
import { type ListenerState, listenerRef, ready, terminatesTls } from './listeners.js';
import type { SnapshotLookup } from './lookup.js';
import { listenerPlace, listenerPolicies, listenerSettings } from './portico-policies.js';
import type { RouteState } from './routes.js';
import { tlsSecretPems } from './secrets.js';
import type { PolicyAssignment, TranslateCache } from './types.js';

/** Identity of everything a fleet config is derived from except its attached routes. */
function frameDeps(input: FleetInput, listeners: ListenerState[]): unknown[] {
  const deps: unknown[] = [input.key];
  for (const g of input.gateways) {
    deps.push(g.gateway);
    for (const ls of g.listenerSets) deps.push(ls.listenerSet);
    const client = g.backendClientCertificate?.secret;
    if (client !== undefined) deps.push(input.lookup.secrets.get(client));
  }
  for (const l of listeners) {
    deps.push(`${l.gatewayKey}|${l.index}|${l.certificates.join(',')}|${l.clientValidation?.mode ?? ''}`);
    deps.push(l.clientValidation?.caPem);
    for (const c of l.certificates) deps.push(input.lookup.secrets.get(c));
  }
  return deps;
}

/** What the incremental path came to: a config, a change it does not handle, or a throw (a bug) and why. */
type IncrementalOutcome =
  | { kind: 'built'; config: FleetConfig }
  | { kind: 'needs-full-build' }
  | { kind: 'failed'; reason: string };

function buildIncrementally(
  state: FleetBuildState,
  input: FleetInput,
  listeners: ListenerState[],
): IncrementalOutcome {
  try {
    const config = updateFleet(state, input, listeners);
    return config === undefined ? { kind: 'needs-full-build' } : { kind: 'built', config };
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return { kind: 'failed', reason: `fleet ${input.key}: ${reason}` };
  }
}

export function buildFleet(input: FleetInput, cache?: TranslateCache): FleetConfig {
  const listeners = input.gateways.flatMap((g) => g.listeners.filter(ready));
  if (cache === undefined) return buildFleetUncached(input, listeners, undefined).config;
  const counts = cache.fleetBuilds;
  const frame = frameDeps(input, listeners);
  const before = cache.fleets.get(input.key);
  // With Portico policies, what a route gets depends on more than the route: the full build (it reuses unchanged
  // VirtualHosts, so discovery still sends only what changed).
  if (before !== undefined && sameItems(before.frame, frame) && input.policies === undefined) {
    const outcome = buildIncrementally(before, input, listeners);
    if (outcome.kind === 'built') {
      counts.incremental++;
      return outcome.config;
    }
    // A bug in the incremental path must not cost correctness: the full build below is the reference.
    if (outcome.kind === 'failed') {
      counts.incrementalFailures++;
      counts.lastIncrementalFailure = outcome.reason;
    }
  }
  counts.full++;
  const state = buildFleetUncached(input, listeners, before?.config);
  state.frame = frame;
  cache.fleets.set(input.key, state);
  return state.config;
}

/** The full build's working state, shared by its steps. */
interface FullBuild {
  input: FleetInput;
  /** The fleet's ready listeners: entries and hosts name a listener by its index here. */
  listeners: ListenerState[];
  /** Per ready listener (by index): its attached routes' contributions. */
  entries: Map<RouteObject, RouteEntry>[];
  clusterRefs: Map<string, number>;
  usedSecrets: Set<string>;
  /** The previous config's VirtualHosts by name: an unchanged one is reused as the same object. */
  previousHosts: Map<string, VirtualHost>;
}

/** A route attached through one listener, with its effective hostnames there. */
interface EffectiveRoute {
  route: RouteState;
  hostnames: string[];
}

/** What a port serves: a VirtualHost per hostname and, per listener on it (in order), its effective routes. */
interface PortHosts {
  hosts: Map<string, HostState>;
  hostRefs: Map<string, number>;
  listenerHostnames: Set<string>;
  effective: EffectiveRoute[][];
}

function buildFleetUncached(
  input: FleetInput,
  listeners: ListenerState[],
  previous: FleetConfig | undefined,
): FleetBuildState {
  const build: FullBuild = {
    input,
    listeners,
    entries: listeners.map(() => new Map<RouteObject, RouteEntry>()),
    clusterRefs: new Map(),
    usedSecrets: new Set(),
    previousHosts: new Map(previous?.virtualHosts.map((v) => [v.name, v])),
  };
  const ports = new Map<number, PortState>();
  const fleetListeners: Listener[] = [];
  const virtualHosts: VirtualHost[] = [];
  for (const [port, indexes] of listenersByPort(listeners)) {
    const state = buildPort(build, port, indexes);
    for (const host of state.hosts.values()) virtualHosts.push(host.vhost!);
    fleetListeners.push(state.listener);
    ports.set(port, state);
  }
  const { clusterRefs } = build;
  const policies = fleetPolicies(virtualHosts, input.policies);
  const names = new Set([
    ...clusterRefs.keys(),
    ...policyClusters(policies, input),
    ...listenerFilterClusters(virtualHosts, input),
  ]);
  const { clusters, endpoints, objects } = fleetClusters(names, input.clusters);
  const gateways: FleetGateway[] = [];
  for (const g of input.gateways) {
    if (g.listeners.some(ready)) {
      const client = g.backendClientCertificate?.secret;
      if (client === undefined) gateways.push({ name: g.key, generation: g.gateway.metadata.generation });
      else {
        build.usedSecrets.add(client);
        gateways.push({
          name: g.key,
          generation: g.gateway.metadata.generation,
          backendClientCertificate: client,
        });
      }
    }
    for (const ls of g.listenerSets) {
      if (!ls.listeners.some(ready)) continue;
      gateways.push({ name: listenerSetFleetName(ls.key), generation: ls.listenerSet.metadata.generation });
    }
  }
  const config: FleetConfig = {
    schemaVersion: FLEET_CONFIG_SCHEMA_VERSION,
    fleet: input.key,
    gateways: gateways.sort(byName),
    listeners: fleetListeners.sort(byName),
    virtualHosts: virtualHosts.sort(byName),
    clusters,
    endpoints,
    secrets: fleetSecrets(build.usedSecrets, input.lookup).sort(byName),
    policies,
  };
  return { frame: [], entries: build.entries, ports, clusterRefs, clusterObjects: objects, config };
}

/** The clusters of the policies' authorization services, resolved into the translation's cluster table. */
function policyClusters(policies: readonly FleetPolicy[], input: FleetInput): string[] {
  const names: string[] = [];
  for (const p of policies) {
    const cluster = p.externalAuth?.cluster;
    if (cluster === undefined || names.includes(cluster)) continue;
    if (resolveNamedCluster(cluster, input.lookup, input.clusters, undefined)) names.push(cluster);
  }
  return names;
}

/** The clusters of the listeners' pre-routing authorization services (a refused filter's is not reached). */
function listenerFilterClusters(virtualHosts: readonly VirtualHost[], input: FleetInput): string[] {
  const names: string[] = [];
  for (const v of virtualHosts) {
    for (const f of v.requestFilters ?? []) {
      const cluster = f.auth.cluster;
      if (f.refused !== undefined || names.includes(cluster)) continue;
      if (resolveNamedCluster(cluster, input.lookup, input.clusters, undefined)) names.push(cluster);
    }
  }
  return names;
}

/** The policies the VirtualHosts and their routes name, each once, by name. */
function fleetPolicies(
  virtualHosts: readonly VirtualHost[],
  assignment: PolicyAssignment | undefined,
): FleetPolicy[] {
  if (assignment === undefined) return [];
  const used = new Set<string>();
  for (const v of virtualHosts) {
    for (const name of v.policies ?? []) used.add(name);
    for (const r of v.routes) for (const name of r.policies ?? []) used.add(name);
  }
  return [...used].sort().map((name) => assignment.resources.get(name)!);
}

/** Indexes of the ready listeners by port, in listener order. */
function listenersByPort(listeners: ListenerState[]): Map<number, number[]> {
  const byPort = new Map<number, number[]>();
  listeners.forEach((l, i) => {
    const list = byPort.get(l.spec.port);
    if (list === undefined) byPort.set(l.spec.port, [i]);
    else list.push(i);
  });
  return byPort;
}

/** One port's VirtualHosts, route entries and Listener: recorded in `build`, returned as its PortState. */
function buildPort(build: FullBuild, port: number, indexes: number[]): PortState {
  const served = portHosts(build, port, indexes);
  const wildcards = attachEntries(build, indexes, served);
  const assignment = build.input.policies;
  for (const host of served.hosts.values()) {
    const place = listenerPlace(build.listeners[host.owner]!);
    const policies =
      assignment === undefined
        ? undefined
        : { assignment, listener: listenerPolicies(assignment, place), place };
    host.vhost = hostVirtualHost(
      host,
      build.previousHosts.get(host.name),
      build.input.memos.rankedRoutes,
      policies,
      build.listeners[host.owner]!.requestFilters,
    );
  }
  const onPort = indexes.map((i) => build.listeners[i]!);
  const listener = portListener(port, onPort, build.usedSecrets);
  // One socket per port: the first of its Gateway listeners (in listener order) with a ClientTrafficPolicy sets it
  // (the others' policies say Conflicted there: sharedSocketLosers in portico-policies.ts).
  for (const l of onPort) {
    const settings = listenerSettings(assignment, listenerPlace(l));
    if (settings === undefined) continue;
    Object.assign(listener, settings);
    break;
  }
  const { hosts, hostRefs, listenerHostnames } = served;
  return { port, listeners: indexes, listenerHostnames, hosts, hostRefs, wildcards, listener };
}

/**
 * Every listener hostname gets its VirtualHost, even empty, so its requests never fall to a wider one; so does
 * every effective hostname of an attached route, owned by the most specific listener serving it.
 */
function portHosts(build: FullBuild, port: number, indexes: number[]): PortHosts {
  const hosts = new Map<string, HostState>();
  const hostRefs = new Map<string, number>();
  const listenerHostnames = new Set<string>();
  const effective: EffectiveRoute[][] = [];
  const addHost = (h: string): void => {
    if (hosts.has(h)) return;
    const owner = hostOwner(indexes, build.listeners, h);
    if (owner !== undefined) {
      const listener = `port-${port}`;
      hosts.set(h, { hostname: h, name: `${listener}/${h}`, listener, owner, contributors: new Map() });
    }
  };
  for (const li of indexes) {
    const l = build.listeners[li]!;
    const own = l.spec.hostname ?? '*';
    listenerHostnames.add(own);
    addHost(own);
    const list: EffectiveRoute[] = [];
    for (const route of l.attached) {
      const rs = build.input.routes.get(route);
      if (rs === undefined) continue;
      const hostnames = effectiveHostnames(l.spec.hostname, route.spec.hostnames);
      for (const h of hostnames) {
        addHost(h);
        hostRefs.set(h, (hostRefs.get(h) ?? 0) + 1);
      }
      list.push({ route: rs, hostnames });
    }
    effective.push(list);
  }
  return { hosts, hostRefs, listenerHostnames, effective };
}

/**
 * A route serves every VirtualHost of its listener that one of its hostnames covers: requests for
 * foo.example.com pick that VirtualHost only, so routes for *.example.com must be there too. Records each
 * (listener, route) entry and counts its clusters; returns the entries with a wildcard hostname.
 */
function attachEntries(build: FullBuild, indexes: number[], served: PortHosts): RouteEntry[] {
  const allHosts = [...served.hosts.values()];
  const wildcards: RouteEntry[] = [];
  indexes.forEach((li, k) => {
    for (const { route: rs, hostnames } of served.effective[k]!) {
      const entry = routeEntry(li, rs, hostnames);
      for (const e of hostnames) {
        for (const host of hostTargets(e, li, served.hosts, allHosts)) {
          if (host.contributors.has(rs.route)) continue;
          host.contributors.set(rs.route, rs);
          entry.targets.push(host);
        }
      }
      if (entry.targets.length > 0) {
        for (const c of entry.clusters) build.clusterRefs.set(c, (build.clusterRefs.get(c) ?? 0) + 1);
      }
      build.entries[li]!.set(rs.route, entry);
      if (hostnames.some((h) => h === '*' || isWildcard(h))) wildcards.push(entry);
    }
  });
  return wildcards;
}

/** The VirtualHosts of listener `li` an effective hostname reaches: its exact one, or all a wildcard covers. */
function hostTargets(
  e: string,
  li: number,
  hosts: Map<string, HostState>,
  allHosts: HostState[],
): HostState[] {
  if (e === '*' || isWildcard(e)) {
    return allHosts.filter((v) => v.owner === li && (e === '*' || e === v.hostname || covers(e, v.hostname)));
  }
  const exact = hosts.get(e);
  return exact !== undefined && exact.owner === li ? [exact] : [];
}

/** The fleet Listener of one port: its Gateway listeners and certificates (its VirtualHosts name it). */
function portListener(port: number, onPort: ListenerState[], usedSecrets: Set<string>): Listener {
  const listener: Listener = {
    name: `port-${port}`,
    port,
    // Listeners of one port share a protocol (another one is Conflicted and left out).
    protocol: onPort[0]!.spec.protocol as ListenerProtocol,
    gatewayListeners: onPort.map(listenerRef).sort(byGatewayListener),
  };
  if (listener.protocol === 'HTTPS' || listener.protocol === 'TLS') {
    const certificates: TlsCertificateChoice[] = onPort
      .slice()
      .sort((a, b) => compareSpecificity(a.spec.hostname, b.spec.hostname))
      .map((l) =>
        terminatesTls(l.spec)
          ? { hostnames: [l.spec.hostname ?? '*'], secrets: l.certificates }
          : { hostnames: [l.spec.hostname ?? '*'], secrets: [], passthrough: true },
      );
    for (const c of certificates) for (const s of c.secrets) usedSecrets.add(s);
    listener.tls = { certificates };
    // Per port by the API; in a merged fleet, the oldest Gateway's on the port decides (as for certificates).
    const validation = onPort.find((l) => l.clientValidation !== undefined)?.clientValidation;
    if (validation !== undefined) listener.tls.clientValidation = validation;
  }
  return listener;
}

function byGatewayListener(
  a: { gateway: string; listener: string },
  b: { gateway: string; listener: string },
): number {
  if (a.gateway !== b.gateway) return a.gateway < b.gateway ? -1 : 1;
  return a.listener < b.listener ? -1 : a.listener > b.listener ? 1 : 0;
}

/** The PEMs of the Secrets the listeners use (a Secret that holds none is left out). */
function fleetSecrets(used: Set<string>, lookup: SnapshotLookup): TlsSecret[] {
  const secrets: TlsSecret[] = [];
  for (const id of used) {
    const s = lookup.secrets.get(id);
    const pems = s === undefined ? undefined : tlsSecretPems(s);
    if (pems !== undefined) secrets.push({ name: id, ...pems });
  }
  return secrets;
}

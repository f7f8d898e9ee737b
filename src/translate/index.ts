// translate(snapshot, options, dataPlane?) → fleet configs, statuses, infra specs. Pure and deterministic:
// no I/O, clock or randomness, and every input list is put in a total order before use.
import type { Gateway } from '../api/gateway.js';
import {
  clusterTrustBundlesServed,
  experimentalGateways,
  type InstalledCrds,
} from '../api/gateway-api-bundle.js';
import type { RouteObject } from '../api/route-kinds.js';
import type { ResourceSnapshot } from '../api/snapshot.js';
import type { FleetConfig } from '../ir/fleet-config.js';
import type { FleetConfigChange } from '../ir/fleet-config-patch.js';
import type { FleetInfra } from '../ir/fleet-infra.js';
import { backendClientCertificate } from './backend-client-certificate.js';
import { backendTlsStatuses, gatewaysByService } from './backend-tls.js';
import type { ClusterTable } from './backends.js';
import { type ClassState, evaluateClasses } from './classes.js';
import { buildFleet } from './fleet.js';
import type { FleetInput } from './fleet-hosts.js';
import { gatewayParameters } from './gateway-parameters.js';
import { fleetInfra } from './infra.js';
import { contestedInfraNames, type InfraClaim } from './infra-names.js';
import { joinListenerSets } from './listener-sets.js';
import { evaluateListener, markConflicts, ready } from './listeners.js';
import { buildLookup, lookupInputs, type SnapshotLookup } from './lookup.js';
import { byAge, nsName } from './object-order.js';
import { assignPolicies, policiesTargetAny, policyObjects } from './portico-policies.js';
import {
  changedRouteStatuses,
  composeRouteChange,
  mixedKinds,
  placeable,
  reattach,
} from './route-changes.js';
import { resolveKindConflicts } from './route-kind-conflicts.js';
import { attachContext, attachRoutes, type GatewayEntry, type RouteState } from './routes.js';
import { sortedRoutes, sortedRoutesAfter } from './sorted-routes.js';
import { classStatus, gatewayStatus, listenerSetStatus, routeStatus } from './status.js';
import type {
  DataPlaneState,
  LastPass,
  ObjectStatus,
  RouteWorld,
  StatusFrame,
  TranslateCache,
  TranslateMemos,
  TranslateOptions,
  TranslateResult,
} from './types.js';
import { createTranslateMemos } from './types.js';

export { fleetInfraName } from '../ir/fleet-infra.js';
export * from './types.js';

/** namespace/name order with each key built once (thousands of routes). */
function sortedByNsName<T extends { metadata: { namespace?: string; name: string } }>(
  items: readonly T[],
): T[] {
  const keyed = items.map((o) => ({ key: nsName(o), o }));
  keyed.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return keyed.map((k) => k.o);
}

export function translate(
  snapshot: ResourceSnapshot,
  options: TranslateOptions,
  dataPlane?: DataPlaneState,
): TranslateResult {
  const cache = options.cache;
  const inputs = passInputs(snapshot, options);
  const last = cache?.lastPass;
  if (cache !== undefined && last !== undefined && sameInputs(last.inputs, inputs)) {
    cache.translations.again++;
    return againWithDataPlane(last, options, dataPlane, snapshot.installedCrds);
  }
  if (cache !== undefined && last?.world !== undefined) {
    const changed = translateChangedRoutes(snapshot, inputs, options, dataPlane, cache, last);
    if (changed !== undefined) {
      cache.translations.changedRoutes++;
      return changed;
    }
  }
  if (cache !== undefined) cache.translations.full++;
  const memos = cache?.memos ?? createTranslateMemos();
  const lookup = cachedLookup(snapshot, cache);
  const classes = evaluateClasses(snapshot, lookup, options.controllerName, cache?.lastGood.classes);
  const ours = snapshot.gateways.filter((g) => classes.has(g.spec.gatewayClassName)).sort(byAge);
  const { gateways, fleets } = gatewayEntries(ours, classes, lookup, memos, options);
  const listenerSets = joinListenerSets(
    snapshot.listenerSets,
    gateways,
    fleets,
    lookup,
    memos.certificateProblems,
  );

  const clusters: ClusterTable = new Map();
  const attach = attachContext({
    gateways,
    listenerSets,
    lookup,
    table: clusters,
    controllerName: options.controllerName,
    compiledRoutes: memos.compiledRoutes,
    ...(cache === undefined ? {} : { memo: cache, attachments: cache.attachments }),
  });
  const attached = attachRoutes(
    [
      ...sortedRoutes(snapshot.httpRoutes, cache?.sortedRoutes.HTTPRoute),
      ...sortedRoutes(snapshot.grpcRoutes, cache?.sortedRoutes.GRPCRoute),
      ...sortedRoutes(snapshot.tlsRoutes, cache?.sortedRoutes.TLSRoute),
      ...sortedRoutes(snapshot.tcpRoutes, cache?.sortedRoutes.TCPRoute),
      ...sortedRoutes(snapshot.udpRoutes, cache?.sortedRoutes.UDPRoute),
    ],
    attach,
  );
  const routeStates = resolveKindConflicts(gateways, attached);
  const world: RouteWorld | undefined =
    routeStates === attached && cache !== undefined
      ? { gateways, fleets, routes: new Map<RouteObject, RouteState>(), attach }
      : undefined;
  if (cache !== undefined) cache.clusters = clusters;
  const routes = world?.routes ?? new Map<RouteObject, RouteState>();
  for (const rs of routeStates) routes.set(rs.route, rs);

  const policies = assignPolicies(
    { snapshot, gateways, fleets, listenerSets, routes: routeStates },
    lookup,
    options.controllerName,
  );
  if (world !== undefined && policies !== undefined) world.policies = policies;
  const built = buildFleets(
    fleets,
    { routes, clusters, lookup, memos, ...(policies === undefined ? {} : { policies }) },
    options,
  );
  const { configs, infra } = uncontested(built);

  const routeStatuses: ObjectStatus[] = [];
  for (const rs of routeStates) {
    const s = routeStatus(rs, memos.routeStatuses);
    if (s !== undefined) routeStatuses.push(s);
  }
  const frame: StatusFrame = {
    classes: [...classes.values()],
    gateways: sortedByNsName(ours).map((g) => gateways.get(nsName(g))!),
    listenerSets: [...listenerSets.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)),
    routeStatuses,
    policyStatuses: [
      ...backendTlsStatuses(lookup.backendTls, gatewaysByService(configs), options.controllerName),
      ...(policies?.statuses ?? []),
    ],
  };
  const statuses = statusesOf(frame, options, dataPlane, snapshot.installedCrds);
  if (cache !== undefined) {
    cache.lastPass = {
      inputs,
      fleets: configs,
      infra,
      frame,
      statuses,
      ...(world === undefined ? {} : { world }),
    };
  }
  return { fleets: configs, statuses, infra, ...fleetChangesOf(configs, cache) };
}

/** The very same lists and options as last time (a pass the data plane started): only the statuses anew. */
function againWithDataPlane(
  last: LastPass,
  options: TranslateOptions,
  dataPlane: DataPlaneState | undefined,
  installed: InstalledCrds | undefined,
): TranslateResult {
  const statuses = statusesOf(last.frame, options, dataPlane, installed);
  const since = last.statuses;
  last.statuses = statuses;
  // The class, Gateway and ListenerSet statuses are made again; every route status is the same object.
  const changed = statuses.slice(0, dataPlaneStatusCount(last.frame));
  return {
    fleets: last.fleets,
    statuses,
    infra: last.infra,
    ...(since === undefined ? {} : { statusDelta: { since, changed, removed: [] } }),
  };
}

/** What each rebuilt fleet's update says changed in its config (a full build says nothing). */
function fleetChangesOf(
  configs: readonly FleetConfig[],
  cache: TranslateCache | undefined,
): { fleetChanges?: Map<string, FleetConfigChange> } {
  if (cache === undefined) return {};
  const changes = new Map<string, FleetConfigChange>();
  for (const config of configs) {
    const change = cache.fleets.get(config.fleet)?.change;
    if (change?.config === config) changes.set(config.fleet, change);
  }
  return changes.size === 0 ? {} : { fleetChanges: changes };
}

/**
 * When only the route lists changed since the last translation and the snapshot says how, the translation by
 * the changed routes alone (route-changes.ts); undefined when it cannot be done that way (the full one then).
 */
function translateChangedRoutes(
  snapshot: ResourceSnapshot,
  inputs: readonly unknown[],
  options: TranslateOptions,
  dataPlane: DataPlaneState | undefined,
  cache: TranslateCache,
  last: LastPass,
): TranslateResult | undefined {
  const world = last.world!;
  // A policy's ancestors follow the routes that reach its Services: with policies, the full translation.
  if (snapshot.backendTlsPolicies.length > 0) return undefined;
  // Every input but the two route lists (indexes 2 and 3 of passInputs) is the very same.
  if (!inputs.every((x, i) => i === 2 || i === 3 || x === last.inputs[i])) return undefined;
  const http = composeRouteChange(snapshot.routeChanges?.httpRoutes, last.inputs[2], snapshot.httpRoutes);
  const grpc = composeRouteChange(snapshot.routeChanges?.grpcRoutes, last.inputs[3], snapshot.grpcRoutes);
  if (http === undefined || grpc === undefined || !placeable([http, grpc])) return undefined;
  // Portico policies hold routes by name: a change to a route one names changes its assignment and statuses.
  const named = [...http.removed, ...grpc.removed, ...http.added, ...grpc.added];
  const withPolicies = policyObjects(snapshot).some((list) => list.length > 0);
  if (withPolicies && (world.policies === undefined || policiesTargetAny(snapshot, named))) return undefined;
  const sorted = cache.sortedRoutes;
  if (sortedRoutesAfter(snapshot.httpRoutes, sorted.HTTPRoute, http.removed, http.added) === undefined)
    return undefined;
  if (sortedRoutesAfter(snapshot.grpcRoutes, sorted.GRPCRoute, grpc.removed, grpc.added) === undefined)
    return undefined;
  // From here the last translation's world is changed in place: if this cannot finish, it is dropped.
  delete last.world;
  const removed = [...http.removed, ...grpc.removed];
  const added = [...http.added, ...grpc.added];
  const moved = reattach(world, removed, added);
  if (moved === undefined || mixedKinds(moved.touched)) return undefined;
  const memos = cache.memos;
  const built = buildFleets(
    world.fleets,
    {
      routes: world.routes,
      clusters: world.attach.table,
      lookup: world.attach.lookup,
      memos,
      changed: { removed, added },
      ...(world.policies === undefined ? {} : { policies: world.policies }),
    },
    options,
  );
  const { configs, infra } = uncontested(built);
  const routeStatuses = changedRouteStatuses(
    last.frame.routeStatuses,
    moved.removedStates,
    moved.addedStates,
    memos.routeStatuses,
  );
  if (routeStatuses === undefined) return undefined;
  const frame: StatusFrame = { ...last.frame, routeStatuses: routeStatuses.list };
  const statuses = statusesOf(frame, options, dataPlane, snapshot.installedCrds);
  const since = last.statuses;
  cache.lastPass = { inputs, fleets: configs, infra, frame, statuses, world };
  const changed = [...statuses.slice(0, dataPlaneStatusCount(frame)), ...routeStatuses.changed];
  return {
    fleets: configs,
    statuses,
    infra,
    ...(since === undefined ? {} : { statusDelta: { since, changed, removed: routeStatuses.removed } }),
    ...fleetChangesOf(configs, cache),
  };
}

/** Every snapshot list and option a translation reads; the same items again give the same translation. */
function passInputs(snapshot: ResourceSnapshot, options: TranslateOptions): unknown[] {
  const s = snapshot;
  return [
    s.gatewayClasses,
    s.gateways,
    s.httpRoutes,
    s.grpcRoutes,
    s.referenceGrants,
    s.services,
    s.endpointSlices,
    s.namespaces,
    s.secrets,
    s.dataPlaneProxies,
    s.unusable,
    s.configMaps,
    s.backendTlsPolicies,
    options.controllerName,
    options.controllerNamespace,
    options.deployType,
    s.listenerSets,
    // Layer-4 routes last: a change to them takes the full translation (only HTTP and gRPC routes have the
    // incremental one).
    s.tlsRoutes,
    s.tcpRoutes,
    s.udpRoutes,
    ...policyObjects(s),
    s.clusterTrustBundles,
    clusterTrustBundlesServed(s.installedCrds),
  ];
}

function sameInputs(a: readonly unknown[], b: readonly unknown[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** How many statuses come before the routes': those a translation makes anew every time. */
function dataPlaneStatusCount(frame: StatusFrame): number {
  return frame.classes.length + frame.gateways.length + frame.listenerSets.length;
}

/** Class statuses, then our Gateways' and ListenerSets' (the ones the data plane moves), then the routes'. */
function statusesOf(
  frame: StatusFrame,
  options: TranslateOptions,
  dataPlane: DataPlaneState | undefined,
  installed: InstalledCrds | undefined,
): ObjectStatus[] {
  const statuses: ObjectStatus[] = [];
  for (const c of frame.classes) statuses.push(classStatus(c, options.deployType, installed));
  const routability = experimentalGateways(installed);
  for (const g of frame.gateways) statuses.push(gatewayStatus(g, dataPlane, routability));
  for (const ls of frame.listenerSets) statuses.push(listenerSetStatus(ls, dataPlane));
  for (const s of frame.routeStatuses) statuses.push(s);
  for (const s of frame.policyStatuses) statuses.push(s);
  return statuses;
}

/** The cache's lookup while the snapshot lists it was built from are the same objects, else a new one. */
function cachedLookup(snapshot: ResourceSnapshot, cache: TranslateCache | undefined): SnapshotLookup {
  const inputs = lookupInputs(snapshot);
  const lookup =
    cache?.lookup !== undefined && inputs.every((x, i) => x === cache.lookup?.inputs[i])
      ? cache.lookup.value
      : buildLookup(snapshot);
  if (cache !== undefined) cache.lookup = { inputs, value: lookup };
  return lookup;
}

/**
 * Our Gateways with their own listeners evaluated, by `ns/name` and grouped by fleet (oldest first in each);
 * ListenerSets join them after (listener-sets.ts).
 */
function gatewayEntries(
  ours: Gateway[],
  classes: Map<string, ClassState>,
  lookup: SnapshotLookup,
  memos: TranslateMemos,
  options: TranslateOptions,
): { gateways: Map<string, GatewayEntry>; fleets: Map<string, GatewayEntry[]> } {
  const gateways = new Map<string, GatewayEntry>();
  const fleets = new Map<string, GatewayEntry[]>();
  const lastGood = options.cache?.lastGood.gateways;
  for (const g of ours) {
    const classState = classes.get(g.spec.gatewayClassName)!;
    const fleet = classState.merged ? classState.gatewayClass.metadata.name : nsName(g);
    const listeners = g.spec.listeners.map((_, i) =>
      evaluateListener(g, i, fleet, lookup, memos.certificateProblems),
    );
    const key = nsName(g);
    const own = gatewayParameters(g, classState, lookup, options.deployType);
    const entry: GatewayEntry = {
      gateway: g,
      key,
      classState,
      fleet,
      listeners,
      listenerSets: [],
      parameters: {},
    };
    const clientCertificate = backendClientCertificate(g, lookup, memos.certificateProblems);
    if (clientCertificate !== undefined) entry.backendClientCertificate = clientCertificate;
    if (own.ok) {
      entry.parameters = own.parameters;
      if (own.unused !== undefined) entry.unusedParameters = own.unused;
      if (classState.accepted.ok) lastGood?.set(key, own.parameters);
    } else {
      // The fleet keeps serving: with the parameters it last had, else (a new Gateway, a new controller) its class's.
      const held = lastGood?.get(key);
      entry.parameters = held ?? classState.parameters;
      entry.invalidParameters = `${own.problem}; ${held === undefined ? "its fleet takes the GatewayClass's parameters" : 'its fleet keeps its last good parameters'} until this is fixed`;
    }
    gateways.set(entry.key, entry);
    const group = fleets.get(fleet);
    if (group === undefined) fleets.set(fleet, [entry]);
    else group.push(entry);
  }
  for (const group of fleets.values()) markConflicts(group.flatMap((e) => e.listeners));
  if (lastGood !== undefined)
    for (const key of [...lastGood.keys()]) if (!gateways.has(key)) lastGood.delete(key);
  return { gateways, fleets };
}

type BuiltFleet = InfraClaim & { config: FleetConfig; group: GatewayEntry[] };

/**
 * The config and infrastructure of every fleet that has an accepted class and a ready listener, in fleet key
 * order; the cache forgets fleets that are gone.
 */
function buildFleets(
  fleets: Map<string, GatewayEntry[]>,
  resolved: Omit<FleetInput, 'key' | 'gateways'>,
  options: TranslateOptions,
): BuiltFleet[] {
  const built: BuiltFleet[] = [];
  const fleetKeys = [...fleets.keys()].sort();
  for (const key of fleetKeys) {
    const group = fleets.get(key)!;
    const classState = group[0]!.classState;
    if (!classState.accepted.ok && classState.holding !== true) continue;
    if (!group.some((e) => e.listeners.some(ready))) continue;
    const config = buildFleet({ key, gateways: group, ...resolved }, options.cache);
    const merged = group[0]!.classState.merged;
    const spec = fleetInfra(config, group, merged, options.controllerNamespace, options.deployType);
    // Entries are in age order, so a group's first Gateway is its oldest.
    built.push({ infra: spec, oldest: group[0]!.gateway, config, group });
  }
  const cache = options.cache;
  if (cache !== undefined) {
    const live = new Set(fleetKeys);
    for (const k of [...cache.fleets.keys()]) if (!live.has(k)) cache.fleets.delete(k);
  }
  return built;
}

/** The fleets whose infrastructure names no older fleet claims; the others' Gateways are told why. */
function uncontested(built: BuiltFleet[]): { configs: FleetConfig[]; infra: FleetInfra[] } {
  const contested = contestedInfraNames(built, byAge);
  const configs: FleetConfig[] = [];
  const infra: FleetInfra[] = [];
  for (const b of built) {
    const why = contested.get(b.infra.fleet);
    if (why === undefined) {
      configs.push(b.config);
      infra.push(b.infra);
    } else for (const e of b.group) e.infraConflict = why;
  }
  return { configs, infra };
}

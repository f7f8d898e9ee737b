// Portico's policy kinds, one row each: where the snapshot holds their objects and how one becomes a fleet
// resource (AccessPolicy: named by the routes and VirtualHosts it holds) or settings written into the Listeners
// and Routes it holds (ClientTrafficPolicy, RateLimitPolicy: fields the proxy already reads there). Attachment,
// precedence and status are the same for all (policy-attachment.ts); a new kind is a row here and either a member
// of FleetPolicy (src/ir/fleet-config.ts) with its checks in the proxy, or settings of existing IR fields.
import type { RouteObject } from '../api/route-kinds.js';
import type { ResourceSnapshot } from '../api/snapshot.js';
import type { FleetPolicy } from '../ir/fleet-config.js';
import { compileAccessPolicy } from './access-policy.js';
import { compileClientTrafficPolicy } from './client-traffic-policy.js';
import { type ListenerState, ready } from './listeners.js';
import type { SnapshotLookup } from './lookup.js';
import { nsName } from './object-order.js';
import {
  type AttachablePolicy,
  attachPolicies,
  type ListenerPlace,
  listenerHolder,
  listenerHolderKey,
  type PolicyTarget,
  type PolicyTargets,
  ruleHolder,
  targetKey,
} from './policy-attachment.js';
import { compileRateLimitPolicy } from './rate-limit-policy.js';
import type { GatewayEntry, ListenerSetEntry, RouteState } from './routes.js';
import type { CompiledPolicy, ObjectStatus, PolicyAssignment, PolicySettings } from './types.js';

/** One Portico policy kind. */
export interface PolicyKindRow {
  kind: string;
  objects(snapshot: ResourceSnapshot): readonly AttachablePolicy[];
  compile(policy: AttachablePolicy, lookup: SnapshotLookup): CompiledPolicy;
  /** A Gateway's or listener's policy gives its route settings to routes without one of their own. */
  listenerDefaultsRoutes?: true;
  /** Its listener settings are the socket's: one policy per port, the others there say Conflicted. */
  setsSockets?: true;
}

/** A row from a kind's own typed functions (the one narrowing, by `kind`, is here). */
function policyKind<P extends AttachablePolicy>(row: {
  kind: P['kind'];
  objects(snapshot: ResourceSnapshot): readonly P[];
  compile(policy: P, lookup: SnapshotLookup): CompiledPolicy;
  listenerDefaultsRoutes?: true;
  setsSockets?: true;
}): PolicyKindRow {
  return {
    ...row,
    compile: (policy, lookup) => {
      if (policy.kind !== row.kind) throw new Error(`${policy.kind} is not a ${row.kind}`);
      return row.compile(policy as P, lookup);
    },
  };
}

export const POLICY_KINDS: readonly PolicyKindRow[] = [
  policyKind({ kind: 'AccessPolicy', objects: (s) => s.accessPolicies, compile: compileAccessPolicy }),
  policyKind({
    kind: 'ClientTrafficPolicy',
    objects: (s) => s.clientTrafficPolicies,
    compile: compileClientTrafficPolicy,
    setsSockets: true,
  }),
  policyKind({
    kind: 'RateLimitPolicy',
    objects: (s) => s.rateLimitPolicies,
    compile: compileRateLimitPolicy,
    listenerDefaultsRoutes: true,
  }),
];

/** Every policy kind's objects in the snapshot: a translation with none of them has no assignment. */
export function policyObjects(snapshot: ResourceSnapshot): readonly (readonly AttachablePolicy[])[] {
  return POLICY_KINDS.map((k) => k.objects(snapshot));
}

/**
 * Whether any policy of the snapshot names one of these routes: a routes-only change that touches none keeps the
 * last assignment and statuses (a route's name is all a policy holds it by).
 */
export function policiesTargetAny(snapshot: ResourceSnapshot, routes: readonly RouteObject[]): boolean {
  if (routes.length === 0) return false;
  // Layer-4 routes are no policy target: only HTTP and gRPC routes' names count.
  const keys = new Set<string>();
  for (const r of routes) {
    if (r.kind === 'HTTPRoute' || r.kind === 'GRPCRoute')
      keys.add(targetKey(r.kind, r.metadata.namespace ?? '', r.metadata.name));
  }
  return policyObjects(snapshot).some((list) =>
    list.some((p) =>
      p.spec.targetRefs.some(
        (ref) =>
          (ref.kind === 'HTTPRoute' || ref.kind === 'GRPCRoute') &&
          keys.has(targetKey(ref.kind, p.metadata.namespace ?? '', ref.name)),
      ),
    ),
  );
}

/** What a translation knows of the objects policies may target. */
export interface TargetWorld {
  snapshot: ResourceSnapshot;
  gateways: ReadonlyMap<string, GatewayEntry>;
  /** Each fleet's Gateways, oldest first (as its listeners are ordered: buildFleet). */
  fleets: ReadonlyMap<string, readonly GatewayEntry[]>;
  listenerSets: ReadonlyMap<string, ListenerSetEntry>;
  routes: Iterable<RouteState>;
}

export function policyTargets(world: TargetWorld): PolicyTargets {
  const targets = new Map<string, PolicyTarget>();
  const s = world.snapshot;
  for (const g of s.gateways) {
    const key = nsName(g);
    targets.set(targetKey('Gateway', g.metadata.namespace ?? '', g.metadata.name), {
      sections: new Set(g.spec.listeners.map((l) => l.name)),
      gateways: world.gateways.has(key) ? [key] : [],
    });
  }
  for (const ls of s.listenerSets) {
    const entry = world.listenerSets.get(nsName(ls));
    targets.set(targetKey('ListenerSet', ls.metadata.namespace ?? '', ls.metadata.name), {
      sections: new Set(ls.spec.listeners.map((l) => l.name)),
      gateways: entry === undefined || entry.refused !== undefined ? [] : [entry.gateway.key],
    });
  }
  const attached = new Map<string, string[]>();
  for (const rs of world.routes) {
    // Policies attach to HTTP and gRPC routes; a layer-4 route is no target.
    if (rs.route.kind !== 'HTTPRoute' && rs.route.kind !== 'GRPCRoute') continue;
    const key = targetKey(rs.route.kind, rs.route.metadata.namespace ?? '', rs.route.metadata.name);
    attached.set(key, [...new Set(rs.attachedTo.map((a) => a.gatewayKey))].sort());
  }
  for (const r of [...s.httpRoutes, ...s.grpcRoutes]) {
    const key = targetKey(r.kind, r.metadata.namespace ?? '', r.metadata.name);
    const sections = new Set<string>();
    for (const rule of r.spec.rules) if (rule.name !== undefined) sections.add(rule.name);
    targets.set(key, { sections, gateways: attached.get(key) ?? [] });
  }
  return targets;
}

/** Every kind's policies attached; undefined when the snapshot has no policy at all. */
export function assignPolicies(
  world: TargetWorld,
  lookup: SnapshotLookup,
  controllerName: string,
): PolicyAssignment | undefined {
  if (policyObjects(world.snapshot).every((list) => list.length === 0)) return undefined;
  const targets = policyTargets(world);
  const resources = new Map<string, FleetPolicy>();
  const settings = new Map<string, PolicySettings>();
  const statuses: ObjectStatus[] = [];
  const holders = POLICY_KINDS.map((row) => {
    const compiled = new Map<AttachablePolicy, CompiledPolicy>();
    for (const p of row.objects(world.snapshot)) compiled.set(p, row.compile(p, lookup));
    const attached = attachPolicies(
      row.objects(world.snapshot),
      targets,
      (p) => compiled.get(p)?.problem,
      controllerName,
      row.setsSockets === true ? (holders) => sharedSocketLosers(world.fleets, holders) : undefined,
    );
    statuses.push(...attached.statuses);
    const names = new Map<string, string>();
    for (const [key, p] of attached.holders) {
      const c = compiled.get(p)!;
      if ('config' in c) resources.set(c.config.name, c.config);
      else settings.set(c.name, c.settings);
      names.set(key, 'config' in c ? c.config.name : c.name);
    }
    return names;
  });
  return { resources, settings, holders, statuses };
}

/** Where a listener sits, as policy precedence reads it. */
export function listenerPlace(l: ListenerState): ListenerPlace {
  const place: ListenerPlace = { gateway: l.gatewayKey, listener: l.spec.name };
  if (l.listenerSet !== undefined) place.listenerSet = l.listenerSet.key;
  return place;
}

function listenerName(l: ListenerState): string {
  return l.listenerSet === undefined
    ? `Gateway ${l.gatewayKey} listener ${l.spec.name}`
    : `ListenerSet ${l.listenerSet.key} listener ${l.spec.name}`;
}

/**
 * For a kind that sets sockets: the holder keys whose policy loses a port. A port is one socket of its fleet, set
 * by the first of its ready listeners (in fleet order, as buildPort reads them) that has a policy; another
 * listener there held by another policy names the listener, the port and the policy that sets it.
 */
function sharedSocketLosers(
  fleets: ReadonlyMap<string, readonly GatewayEntry[]>,
  holders: ReadonlyMap<string, AttachablePolicy>,
): Map<string, string> {
  const lost = new Map<string, string>();
  for (const group of fleets.values()) {
    const setBy = new Map<number, { listener: ListenerState; policy: AttachablePolicy }>();
    for (const l of group.flatMap((g) => g.listeners.filter(ready))) {
      const key = listenerHolderKey(holders, listenerPlace(l));
      if (key === undefined) continue;
      const policy = holders.get(key)!;
      const first = setBy.get(l.spec.port);
      if (first === undefined) setBy.set(l.spec.port, { listener: l, policy });
      else if (first.policy !== policy && !lost.has(key))
        lost.set(
          key,
          `${listenerName(l)} shares port ${l.spec.port} with ${listenerName(first.listener)}, whose ${first.policy.kind} ${first.policy.metadata.namespace}/${first.policy.metadata.name} sets that port's socket: this policy does not apply there`,
        );
    }
  }
  return lost;
}

/** The policies a listener gets, one per kind at most; undefined when none. */
export function listenerPolicies(
  a: PolicyAssignment | undefined,
  place: ListenerPlace,
): string[] | undefined {
  if (a === undefined) return undefined;
  const out: string[] = [];
  for (const holders of a.holders) {
    const name = listenerHolder(holders, place);
    if (name !== undefined && a.resources.has(name)) out.push(name);
  }
  return out.length === 0 ? undefined : out;
}

/** The policies a route rule gets, one per kind at most; undefined when none. */
export function rulePolicies(
  a: PolicyAssignment | undefined,
  route: RouteState['route'],
  rule: number,
): string[] | undefined {
  if (a === undefined || (route.kind !== 'HTTPRoute' && route.kind !== 'GRPCRoute')) return undefined;
  const ruleName = route.spec.rules[rule]?.name;
  const out: string[] = [];
  for (const holders of a.holders) {
    const name = ruleHolder(
      holders,
      route.kind,
      route.metadata.namespace ?? '',
      route.metadata.name,
      ruleName,
    );
    if (name !== undefined && a.resources.has(name)) out.push(name);
  }
  return out.length === 0 ? undefined : out;
}

/** The listener fields the settings kinds' policies of a listener set; undefined when none. */
export function listenerSettings(
  a: PolicyAssignment | undefined,
  place: ListenerPlace,
): PolicySettings['listener'] | undefined {
  if (a === undefined) return undefined;
  let out: PolicySettings['listener'] | undefined;
  for (const holders of a.holders) {
    const name = listenerHolder(holders, place);
    const own = name === undefined ? undefined : a.settings.get(name)?.listener;
    if (own !== undefined) out = { ...out, ...own };
  }
  return out;
}

/**
 * The route fields the settings kinds' policies of a route rule set: its rule's, else its route's, else (for a
 * kind whose listener policies are route defaults) the listener's it is served through; undefined when none.
 */
export function ruleSettings(
  a: PolicyAssignment | undefined,
  route: RouteState['route'],
  rule: number,
  place: ListenerPlace | undefined,
): PolicySettings['route'] | undefined {
  if (a === undefined || (route.kind !== 'HTTPRoute' && route.kind !== 'GRPCRoute')) return undefined;
  const ruleName = route.spec.rules[rule]?.name;
  let out: PolicySettings['route'] | undefined;
  a.holders.forEach((holders, i) => {
    const ns = route.metadata.namespace ?? '';
    const name =
      ruleHolder(holders, route.kind, ns, route.metadata.name, ruleName) ??
      (POLICY_KINDS[i]!.listenerDefaultsRoutes === true && place !== undefined
        ? listenerHolder(holders, place)
        : undefined);
    const own = name === undefined ? undefined : a.settings.get(name)?.route;
    if (own !== undefined) out = { ...out, ...own };
  });
  return out;
}

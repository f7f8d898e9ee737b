// The translator's inputs and outputs (besides the snapshot and the fleet config contract).
import type { Secret } from '../api/core.js';
import type { RouteKind, RouteObject } from '../api/route-kinds.js';
import type { FleetConfig, FleetPolicy, Listener, Route } from '../ir/fleet-config.js';
import type { FleetConfigChange } from '../ir/fleet-config-patch.js';
import type { DeployType, FleetInfra, FleetParameters } from '../ir/fleet-infra.js';
import type { ClusterTable, ResolvedCluster, ResolvedRoute } from './backends.js';
import type { ClassState } from './classes.js';
import type { FleetBuildState } from './fleet-build-state.js';
import type { SnapshotLookup } from './lookup.js';
import type { RankedRoute } from './precedence.js';
import type { CompiledRoute } from './route-rules.js';
import {
  type AttachContext,
  type AttachmentMemo,
  createAttachmentMemo,
  type GatewayEntry,
  type ListenerSetEntry,
  type RouteState,
} from './routes.js';
import type { SortedRoutesMemo } from './sorted-routes.js';

export interface TranslateOptions {
  controllerName: string;
  controllerNamespace: string;
  deployType: DeployType;
  /** Reuses work from earlier calls for unchanged input objects (see createTranslateCache). */
  cache?: TranslateCache;
}

export interface GatewayAddress {
  type: 'IPAddress' | 'Hostname';
  value: string;
  /** `Cluster`: a Service cluster IP, in the cluster's Service CIDR. Absent: no reachability promise. */
  routability?: 'Cluster';
  /** Given only to a Gateway that asks for it (a LoadBalancer Service's cluster IP), not by default. */
  onRequestOnly?: true;
}

/** What the data plane reports, as pure data: needed for `Programmed`. */
export interface DataPlaneState {
  fleets: Record<
    string,
    {
      addresses: GatewayAddress[];
      /** `ns/name` → the Gateway generation applied by at least one proxy. */
      appliedGateways: Record<string, number>;
      /** E.g. bind failures. */
      listenerErrors: { gateway: string; listener: string; message: string }[];
    }
  >;
}

export interface ObjectStatus {
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
  generation: number;
  status: Record<string, unknown>;
}

export interface TranslateResult {
  fleets: FleetConfig[];
  statuses: ObjectStatus[];
  infra: FleetInfra[];
  /**
   * How `statuses` differs from an earlier translation's list (`since`, as returned then): every status of it not
   * in `changed` is the very same object as there, and `removed` are there and no longer here. Absent: unknown.
   */
  statusDelta?: StatusDelta;
  /** Per fleet whose config changed: which of its resources, when the translation knows (see FleetConfigChange). */
  fleetChanges?: ReadonlyMap<string, FleetConfigChange>;
}

export interface StatusDelta {
  since: readonly ObjectStatus[];
  changed: readonly ObjectStatus[];
  removed: readonly ObjectStatus[];
}

/**
 * Memoised work keyed on input object identity; keep one per provider and pass it to every translate.
 * Inputs must be immutable: a changed object, or a changed snapshot list, must be a new object/array.
 */
export interface TranslateCache {
  /** Per fleet: its last build, for the next one to redo only what changed. */
  fleets: Map<string, FleetBuildState>;
  /** The last lookup and the snapshot lists it was built from. */
  lookup?: { inputs: readonly unknown[]; value: SnapshotLookup };
  /** Clusters of the last translation: reused while their Service and EndpointSlices are the same objects. */
  clusters: ClusterTable;
  /** Per route: backend resolution against one lookup. */
  backends: WeakMap<
    RouteObject,
    { lookup: SnapshotLookup; resolved: ResolvedRoute; clusters: ResolvedCluster[] }
  >;
  /** Per route: its attachment to its parents, reused while the route, parents, lookup and backends are. */
  attachments: AttachmentMemo;
  /** Per route kind, its routes in namespace/name order, updated rather than re-sorted. */
  sortedRoutes: Record<RouteKind, { value?: SortedRoutesMemo }>;
  /** How the fleet builds through this cache went (read by tests, benchmarks and whoever reports on them). */
  fleetBuilds: FleetBuildCounts;
  /** Translations by path: all of it, only the changed routes, or only the statuses again (same lists). */
  translations: { full: number; changedRoutes: number; again: number };
  /**
   * The last translation, kept for the next with the very same snapshot lists and options (a pass that only the
   * data plane started, such as a proxy's Ack): only the class and Gateway statuses are made again.
   */
  lastPass?: LastPass;
  memos: TranslateMemos;
  /**
   * The last good parameters of each class and Gateway, by name: when a DataPlaneProxy or a reference breaks, the
   * fleets keep serving with these until it is fixed (the objects' statuses say why they are not accepted).
   */
  lastGood: { classes: Map<string, ClassState>; gateways: Map<string, FleetParameters> };
}

/** What a translation made that does not depend on the data plane, with the inputs it was made from. */
export interface LastPass {
  inputs: readonly unknown[];
  fleets: FleetConfig[];
  infra: FleetInfra[];
  frame: StatusFrame;
  /** The statuses returned last (by this translation, or an Ack's pass after it): the next delta's `since`. */
  statuses?: ObjectStatus[];
  /** What the next translation needs to redo only the routes a snapshot says changed; absent: it cannot. */
  world?: RouteWorld;
}

/** A translation's Gateways, route states and attachment context, updated in place by a routes-only change. */
export interface RouteWorld {
  gateways: Map<string, GatewayEntry>;
  /** Our Gateways grouped by fleet, oldest first in each. */
  fleets: Map<string, GatewayEntry[]>;
  routes: Map<RouteObject, RouteState>;
  attach: AttachContext;
  /** The Portico policies' assignment, kept while no change touches a route a policy names. */
  policies?: PolicyAssignment;
}

/** What the statuses of a translation are made from, the data plane aside. */
export interface StatusFrame {
  classes: ClassState[];
  /** Our Gateways in namespace/name order, with their evaluated entries. */
  gateways: GatewayEntry[];
  /** Our ListenerSets (naming one of our Gateways) in namespace/name order. */
  listenerSets: ListenerSetEntry[];
  routeStatuses: ObjectStatus[];
  /** BackendTLSPolicy statuses (after the routes': only a full translation makes them). */
  policyStatuses: ObjectStatus[];
}

/**
 * Pure results memoised on input object identity, held weakly (they go with the objects). A translation
 * without a cache gets its own, so nothing outlives a call in module state.
 */
export interface TranslateMemos {
  /** Per route: its rules in fleet-config terms (a function of the route alone). */
  compiledRoutes: WeakMap<RouteObject, CompiledRoute>;
  /** Per route: its ranked IR routes, while its resolved backends are the same object. */
  rankedRoutes: WeakMap<RouteObject, { backends: ResolvedRoute; policyKey: string; ranked: RankedRoute[] }>;
  /** Per route state: its status, so an unchanged status is the same object. */
  routeStatuses: WeakMap<RouteState, ObjectStatus>;
  /** Per TLS Secret: why its certificate and key cannot serve, or undefined when they can. */
  certificateProblems: WeakMap<Secret, string | undefined>;
}

export function createTranslateMemos(): TranslateMemos {
  return {
    compiledRoutes: new WeakMap(),
    rankedRoutes: new WeakMap(),
    routeStatuses: new WeakMap(),
    certificateProblems: new WeakMap(),
  };
}

/** Fleet builds by path; an incremental build that threw is counted, its reason kept, and the full build used. */
export interface FleetBuildCounts {
  incremental: number;
  full: number;
  /** Incremental builds that threw (a bug): the full build answered instead. */
  incrementalFailures: number;
  /** The last such failure: the fleet and the error's message. */
  lastIncrementalFailure?: string;
}

export function createTranslateCache(): TranslateCache {
  return {
    fleets: new Map(),
    clusters: new Map(),
    backends: new WeakMap(),
    attachments: createAttachmentMemo(),
    sortedRoutes: { HTTPRoute: {}, GRPCRoute: {}, TLSRoute: {}, TCPRoute: {}, UDPRoute: {} },
    fleetBuilds: { incremental: 0, full: 0, incrementalFailures: 0 },
    translations: { full: 0, changedRoutes: 0, again: 0 },
    memos: createTranslateMemos(),
    lastGood: { classes: new Map(), gateways: new Map() },
  };
}

/** Which policies (fleet resource names) each listener and route rule gets, and the policies' statuses. */
export interface PolicyAssignment {
  /** Fleet resources by name. */
  resources: ReadonlyMap<string, FleetPolicy>;
  /** Settings kinds' policies by name. */
  settings: ReadonlyMap<string, PolicySettings>;
  /** Per kind (POLICY_KINDS order): targetKey → the name of the fleet resource of the policy holding it. */
  holders: readonly ReadonlyMap<string, string>[];
  statuses: ObjectStatus[];
}

/** What a settings kind writes into the Listeners and Routes it holds (fields of the fleet config). */
export interface PolicySettings {
  listener?: Pick<Listener, 'clientIp' | 'limits' | 'proxyProtocol'>;
  route?: Pick<Route, 'maxRequestBodyBytes' | 'rateLimits'>;
}

/**
 * A policy in fleet-config terms — a fleet resource (`config`) or settings under a name (`settings`) — and why it
 * cannot be honoured (it then fails closed, as its kind says).
 */
export type CompiledPolicy =
  | { config: FleetPolicy; problem?: string }
  | { name: string; settings: PolicySettings; problem?: string };

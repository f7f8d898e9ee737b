// Route attachment, HTTPRoute and GRPCRoute alike: parentRef (a Gateway or a ListenerSet) → listeners
// (sectionName, port, allowedRoutes, hostnames) and parent status.
import type { Condition } from '../api/common.js';
import type { Gateway } from '../api/gateway.js';
import { GATEWAY_API_GROUP } from '../api/gateway-class.js';
import type { ParentReference, RouteParentStatus } from '../api/http-route.js';
import { selectorMatches } from '../api/label-selector.js';
import type { ListenerSet } from '../api/listener-set.js';
import type { RouteObject } from '../api/route-kinds.js';
import type { FleetParameters } from '../ir/fleet-infra.js';
import type { BackendClientCertificate } from './backend-client-certificate.js';
import { type BackendMemo, type ClusterTable, type ResolvedRoute, resolveRouteBackends } from './backends.js';
import type { ClassState } from './classes.js';
import { compileRoute } from './compile-route.js';
import { condition, type Verdict } from './conditions.js';
import { effectiveHostnames } from './hostnames.js';
import { attachable, type ListenerState, takesKind } from './listeners.js';
import type { SnapshotLookup } from './lookup.js';
import type { CompiledRoute } from './route-rules.js';

export interface GatewayEntry {
  gateway: Gateway;
  key: string;
  classState: ClassState;
  fleet: string;
  /** Its own listeners (in spec order), then those of the ListenerSets that joined it (in `listenerSets` order). */
  listeners: ListenerState[];
  /** The ListenerSets whose listeners joined this Gateway, in precedence order (oldest, then namespace/name). */
  listenerSets: ListenerSetEntry[];
  /** Its fleet's parameters: its class's, with its own DataPlaneProxy laid over them. */
  parameters: FleetParameters;
  /** Why spec.infrastructure.parametersRef cannot be used: the Gateway is then not accepted. */
  invalidParameters?: string;
  /** Why a valid spec.infrastructure.parametersRef is not used (a merged class): said in Accepted's message. */
  unusedParameters?: string;
  /** Why its fleet gets no infrastructure: another fleet holds the same infrastructure name. */
  infraConflict?: string;
  /** spec.tls.backend.clientCertificateRef, resolved; absent when the Gateway names none. */
  backendClientCertificate?: BackendClientCertificate;
}

/** A ListenerSet whose parentRef names one of our Gateways: this controller writes its status. */
export interface ListenerSetEntry {
  listenerSet: ListenerSet;
  /** `ns/name` */
  key: string;
  gateway: GatewayEntry;
  /** Why its listeners do not join the Gateway (reason NotAllowed or ParentNotAccepted); absent when they do. */
  refused?: Verdict;
  /** Its listeners as they joined the Gateway's entry, in spec order; empty when refused. */
  listeners: ListenerState[];
}

/** The Gateway's own listeners (not those its ListenerSets added). */
export function ownListeners(gw: GatewayEntry): ListenerState[] {
  return gw.listeners.filter((l) => l.listenerSet === undefined);
}

export interface RouteState {
  route: RouteObject;
  compiled: CompiledRoute;
  backends: ResolvedRoute;
  /** Our parents only; empty: this controller writes no status on the route. */
  parents: RouteParentStatus[];
  /** The listeners the route attached to, per parent (index into `parents`), in attachment order. */
  attachedTo: AttachedListener[];
}

export interface AttachedListener {
  gatewayKey: string;
  /** The listener's index in its Gateway. */
  index: number;
  /** Index into RouteState.parents. */
  parent: number;
}

function namespaceAllowed(l: ListenerState, routeNs: string, lookup: SnapshotLookup): boolean {
  const from = l.spec.allowedRoutes.namespaces;
  if (from.from === 'All') return true;
  // Same: the namespace of the object that declares the listener (a ListenerSet's own, for its listeners).
  const declaredIn = l.listenerSet?.object.metadata.namespace ?? l.gateway.metadata.namespace ?? '';
  if (from.from === 'Same') return routeNs === declaredIn;
  // The API server labels every namespace with its own name; files may omit it.
  const labels = { ...(lookup.namespaceLabels.get(routeNs) ?? {}), 'kubernetes.io/metadata.name': routeNs };
  return from.selector !== undefined && selectorMatches(from.selector, labels);
}

/** A parent the route names, as this controller sees it: its listeners, or why it has none to offer. */
interface RouteParent {
  /** `Gateway ns/name` or `ListenerSet ns/name`, for messages. */
  label: string;
  gateway: GatewayEntry;
  listeners: ListenerState[];
  refused?: Verdict;
}

/** The parent a parentRef names, when it is one of ours: a Gateway (its own listeners) or a ListenerSet. */
function routeParent(
  ref: ParentReference,
  routeNs: string,
  gateways: Map<string, GatewayEntry>,
  listenerSets: Map<string, ListenerSetEntry>,
): RouteParent | undefined {
  if (ref.group !== GATEWAY_API_GROUP) return undefined;
  const key = `${ref.namespace ?? routeNs}/${ref.name}`;
  if (ref.kind === 'Gateway') {
    const gw = gateways.get(key);
    return gw === undefined
      ? undefined
      : { label: `Gateway ${key}`, gateway: gw, listeners: ownListeners(gw) };
  }
  if (ref.kind !== 'ListenerSet') return undefined;
  const ls = listenerSets.get(key);
  if (ls === undefined) return undefined;
  const parent: RouteParent = { label: `ListenerSet ${key}`, gateway: ls.gateway, listeners: ls.listeners };
  if (ls.refused !== undefined) parent.refused = ls.refused;
  return parent;
}

function attach(
  route: RouteObject,
  ref: ParentReference,
  parent: RouteParent,
  lookup: SnapshotLookup,
): { verdict: Verdict; listeners: ListenerState[] } {
  if (parent.refused !== undefined) {
    const message = `${parent.label} is not attached to Gateway ${parent.gateway.key}: ${parent.refused.message}`;
    return { verdict: { ok: false, reason: 'NotAllowedByListeners', message }, listeners: [] };
  }
  let candidates = parent.listeners;
  if (ref.sectionName !== undefined) candidates = candidates.filter((l) => l.spec.name === ref.sectionName);
  if (ref.port !== undefined) candidates = candidates.filter((l) => l.spec.port === ref.port);
  if (candidates.length === 0) {
    const what = [
      ref.sectionName !== undefined ? `named ${ref.sectionName}` : '',
      ref.port !== undefined ? `on port ${ref.port}` : '',
    ]
      .filter((s) => s !== '')
      .join(' ');
    return {
      verdict: {
        ok: false,
        reason: 'NoMatchingParent',
        message: `${parent.label} has no listener ${what}`,
      },
      listeners: [],
    };
  }
  const routeNs = route.metadata.namespace ?? '';
  const open = candidates.filter((l) => attachable(l) && namespaceAllowed(l, routeNs, lookup));
  const allowed = open.filter((l) => takesKind(l, route.kind));
  if (allowed.length === 0) {
    const message =
      open.length > 0
        ? `no listener of ${parent.label} takes ${route.kind}s (allowedRoutes.kinds)`
        : `no listener of ${parent.label} allows this route`;
    return { verdict: { ok: false, reason: 'NotAllowedByListeners', message }, listeners: [] };
  }
  const matching = allowed.filter(
    (l) => effectiveHostnames(l.spec.hostname, route.spec.hostnames).length > 0,
  );
  if (matching.length === 0) {
    return {
      verdict: {
        ok: false,
        reason: 'NoMatchingListenerHostname',
        message: 'no hostname of the route intersects a listener hostname',
      },
      listeners: [],
    };
  }
  return { verdict: { ok: true, reason: 'Accepted', message: 'Accepted' }, listeners: matching };
}

function echoParentRef(ref: ParentReference): ParentReference {
  const out: ParentReference = { group: ref.group, kind: ref.kind, name: ref.name };
  if (ref.namespace !== undefined) out.namespace = ref.namespace;
  if (ref.sectionName !== undefined) out.sectionName = ref.sectionName;
  if (ref.port !== undefined) out.port = ref.port;
  return out;
}

/** A route's attachment as last computed, and the identity of everything it was computed from. */
export interface AttachmentMemoEntry {
  deps: unknown[];
  /** The context token the entry was last confirmed under. */
  token: object;
  /** Whether the route names one of our Gateways (then its backends are resolved). */
  ours: boolean;
  state: RouteState;
}

/** Per route: its last attachment; an unchanged route with unchanged parents is not attached again. */
export interface AttachmentMemo {
  routes: WeakMap<RouteObject, AttachmentMemoEntry>;
  /**
   * What every route's attachment reads besides itself (lookup, controller name, each Gateway and its listeners'
   * readiness); `token` is replaced when it changes, so an entry with the current token needs no per-route check.
   */
  context?: { deps: unknown[]; token: object };
}

export function createAttachmentMemo(): AttachmentMemo {
  return { routes: new WeakMap() };
}

function sameDeps(a: readonly unknown[], b: readonly unknown[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * What attaching through `gw` reads besides the route, the lookup and the backends: the Gateway object (listener
 * specs, allowedRoutes) and whether each listener takes routes (conflicts and refs come from other objects).
 */
function gatewaySignature(gw: GatewayEntry): string {
  let sig = '';
  for (const l of gw.listeners) sig += attachable(l) ? '1' : '0';
  return sig;
}

/** What attaching one route reads besides the route: the translation's Gateways, lookup and memos. */
export interface AttachContext {
  gateways: Map<string, GatewayEntry>;
  /** Our ListenerSets (those naming one of our Gateways) by `ns/name`, refused ones too. */
  listenerSets: Map<string, ListenerSetEntry>;
  lookup: SnapshotLookup;
  table: ClusterTable;
  controllerName: string;
  compiledRoutes: WeakMap<RouteObject, CompiledRoute>;
  memo?: BackendMemo;
  attachments?: AttachmentMemo;
  /** The attachment memo's context token for this translation (see attachmentContext). */
  token?: object;
  signatureOf(gw: GatewayEntry): string;
}

/**
 * The context for attaching routes in this translation; with a memo, its token is kept while the lookup, the
 * controller name and every Gateway with its listeners' readiness are the same as last time.
 */
export function attachContext(base: Omit<AttachContext, 'token' | 'signatureOf'>): AttachContext {
  const signatures = new Map<GatewayEntry, string>();
  const signatureOf = (gw: GatewayEntry): string => {
    let sig = signatures.get(gw);
    if (sig === undefined) {
      sig = gatewaySignature(gw);
      signatures.set(gw, sig);
    }
    return sig;
  };
  const { attachments, memo, table } = base;
  if (attachments === undefined) return { ...base, signatureOf };
  const context: unknown[] = [base.lookup, base.controllerName];
  for (const [key, gw] of base.gateways) context.push(key, gw.gateway, signatureOf(gw));
  for (const [key, ls] of base.listenerSets) context.push(key, ls.listenerSet, ls.refused?.reason ?? '');
  if (attachments.context === undefined || !sameDeps(attachments.context.deps, context)) {
    attachments.context = { deps: context, token: {} };
  } else if (memo !== undefined) {
    // Same lookup: the last translation's clusters are still right, and routes confirmed below need not
    // resolve their backends again just to put them in the table.
    for (const [name, c] of memo.clusters) if (!table.has(name)) table.set(name, c);
  }
  return { ...base, signatureOf, token: attachments.context.token };
}

/** One route's attachment: from the memo while its parents, lookup and backends are the same, else afresh. */
export function attachOne(route: RouteObject, ctx: AttachContext): RouteState {
  const { attachments, lookup, memo, token } = ctx;
  if (attachments === undefined) {
    return attachRoute(route, ctx, memo);
  }
  const hit = attachments.routes.get(route);
  // Same route object, same context: its deps are equal by construction (the backends memo keys on lookup).
  if (hit !== undefined && hit.token === token) {
    if (hit.ours && memo === undefined) resolveRouteBackends(route, lookup, ctx.table, memo);
    return hit.state;
  }
  const routeNs = route.metadata.namespace ?? '';
  const deps: unknown[] = [lookup, ctx.controllerName];
  let ours = false;
  for (const ref of route.spec.parentRefs) {
    const parent = routeParent(ref, routeNs, ctx.gateways, ctx.listenerSets);
    if (parent === undefined) deps.push(undefined, '', '');
    else {
      ours = true;
      const ls =
        ref.kind === 'ListenerSet'
          ? ctx.listenerSets.get(`${ref.namespace ?? routeNs}/${ref.name}`)
          : undefined;
      deps.push(parent.gateway.gateway, ctx.signatureOf(parent.gateway), ls?.listenerSet ?? '');
    }
  }
  // Backends resolve (memoised) exactly when the uncached path would resolve them.
  deps.push(ours ? resolveRouteBackends(route, lookup, ctx.table, memo) : undefined);
  if (hit !== undefined && sameDeps(hit.deps, deps)) {
    hit.token = token!;
    return hit.state;
  }
  const state = attachRoute(route, ctx, memo);
  attachments.routes.set(route, { deps, token: token!, ours, state });
  return state;
}

/** Routes in namespace/name order; attaches each accepted one to its listeners (`ListenerState.attached`). */
export function attachRoutes(routes: readonly RouteObject[], ctx: AttachContext): RouteState[] {
  const out: RouteState[] = [];
  for (const route of routes) {
    const state = attachOne(route, ctx);
    for (const { gatewayKey, index } of state.attachedTo) {
      const l = ctx.gateways.get(gatewayKey)!.listeners[index]!;
      if (l.attached.at(-1) !== route) l.attached.push(route);
    }
    out.push(state);
  }
  return out;
}

function attachRoute(route: RouteObject, ctx: AttachContext, memo: BackendMemo | undefined): RouteState {
  const { lookup, table, controllerName, compiledRoutes } = ctx;
  const routeNs = route.metadata.namespace ?? '';
  const generation = route.metadata.generation;
  const compiled = compileRoute(route, compiledRoutes);
  let backends: ResolvedRoute | undefined;
  const parents: RouteParentStatus[] = [];
  const attachedTo: AttachedListener[] = [];
  const seen = new Set<string>();
  for (const ref of route.spec.parentRefs) {
    const parent = routeParent(ref, routeNs, ctx.gateways, ctx.listenerSets);
    if (parent === undefined) continue;
    const gw = parent.gateway;
    const refKey = `${ref.kind}/${ref.namespace ?? ''}/${ref.name}/${ref.sectionName ?? ''}/${ref.port ?? ''}`;
    if (seen.has(refKey)) continue;
    seen.add(refKey);
    backends ??= resolveRouteBackends(route, lookup, table, memo);
    let verdict: Verdict;
    if (compiled.unsupported.length > 0) {
      verdict = { ok: false, reason: 'UnsupportedValue', message: compiled.unsupported.join('; ') };
    } else {
      const result = attach(route, ref, parent, lookup);
      verdict = result.verdict;
      for (const l of result.listeners) {
        attachedTo.push({ gatewayKey: gw.key, index: l.index, parent: parents.length });
      }
    }
    const conditions: Condition[] = [
      condition('Accepted', verdict.ok, verdict.reason, verdict.message, generation),
      condition('ResolvedRefs', backends.refs.ok, backends.refs.reason, backends.refs.message, generation),
    ];
    parents.push({ parentRef: echoParentRef(ref), controllerName, conditions });
  }
  return {
    route,
    compiled,
    backends: backends ?? { rules: [], mirrors: [], refs: { ok: true, reason: '', message: '' } },
    parents,
    attachedTo,
  };
}

// Gateway and ListenerSet listeners: protocol support, route kinds, TLS certificate references, and port
// conflicts per fleet.
import { isIP } from 'node:net';
import type { Secret } from '../api/core.js';
import type { Gateway, Listener, RouteGroupKind } from '../api/gateway.js';
import { GATEWAY_API_GROUP } from '../api/gateway-class.js';
import type { ListenerSet } from '../api/listener-set.js';
import { isRouteKind, kindsOfProtocol, type RouteKind, type RouteObject } from '../api/route-kinds.js';
import {
  type ClientValidation,
  type GatewayListenerRef,
  type ListenerRequestFilter,
  listenerSetFleetName,
} from '../ir/fleet-config.js';
import { certificateProblem } from './certificates.js';
import type { Verdict } from './conditions.js';
import { frontendValidation } from './frontend-validation.js';
import { listenerRequestFilters } from './listener-filters.js';
import { notFound, referenceGranted, type SnapshotLookup } from './lookup.js';
import { nsName } from './object-order.js';
import { tlsSecretPems } from './secrets.js';

export interface ListenerState {
  /** The Gateway whose fleet serves the listener (a ListenerSet's parent, for a ListenerSet's listener). */
  gateway: Gateway;
  /** `ns/name` of the Gateway */
  gatewayKey: string;
  /** The listener's index in its Gateway entry's listeners: the Gateway's own, then its ListenerSets'. */
  index: number;
  /** Set for a listener a ListenerSet adds: that ListenerSet and its `ns/name`. */
  listenerSet?: { object: ListenerSet; key: string };
  spec: Listener;
  fleet: string;
  accepted: Verdict;
  resolvedRefs: Verdict;
  /** Set when another listener of the fleet holds the same port (other protocol) or tuple. */
  conflict?: Verdict;
  supportedKinds: RouteGroupKind[];
  /** All certificate references resolved (HTTPS); true for HTTP. */
  certificatesOk: boolean;
  /** `ns/name` of the TLS Secrets, in certificateRefs order. */
  certificates: string[];
  /** HTTPS: the client certificate check the Gateway asks for on the listener's port (`spec.tls.frontend`). */
  clientValidation?: ClientValidation;
  /** Its pre-routing filters (`filters.requests`), in order; absent: none. */
  requestFilters?: ListenerRequestFilter[];
  /** Routes attached (accepted) here: HTTPRoutes, then GRPCRoutes, each in namespace/name order, no duplicates. */
  attached: RouteObject[];
}

/** Does the listener end TLS at the proxy (HTTPS, and a TLS listener in mode Terminate)? */
export function terminatesTls(l: Listener): boolean {
  return l.protocol === 'HTTPS' || (l.protocol === 'TLS' && l.tls?.mode !== 'Passthrough');
}

export function attachable(l: ListenerState): boolean {
  return l.accepted.ok && l.conflict === undefined && l.supportedKinds.length > 0;
}

/** Does the listener take routes of this kind (allowedRoutes.kinds, or both kinds when it names none)? */
export function takesKind(l: ListenerState, kind: RouteKind): boolean {
  return l.supportedKinds.some((k) => k.kind === kind);
}

/** Goes into the fleet config. */
export function ready(l: ListenerState): boolean {
  return attachable(l) && l.certificatesOk;
}

/**
 * A listener takes the route kinds of its protocol (HTTP and HTTPS: HTTPRoutes and GRPCRoutes; TLS: TLSRoutes;
 * TCP: TCPRoutes; UDP: UDPRoutes) unless allowedRoutes.kinds names fewer; a kind of another protocol is invalid.
 */
function routeKinds(l: Listener): { kinds: RouteGroupKind[]; invalid: string[] } {
  const ofProtocol = kindsOfProtocol(l.protocol) ?? [];
  if (l.allowedRoutes.kinds === undefined)
    return { kinds: ofProtocol.map((kind) => ({ group: GATEWAY_API_GROUP, kind })), invalid: [] };
  const kinds: RouteGroupKind[] = [];
  const invalid: string[] = [];
  for (const k of l.allowedRoutes.kinds) {
    if (k.group === GATEWAY_API_GROUP && isRouteKind(k.kind) && ofProtocol.includes(k.kind)) {
      if (!kinds.some((s) => s.kind === k.kind)) kinds.push({ group: GATEWAY_API_GROUP, kind: k.kind });
    } else invalid.push(`${k.group}/${k.kind}`);
  }
  return { kinds, invalid };
}

/** The object a listener is declared in: its certificates are resolved from there (ReferenceGrants name it). */
interface ListenerOwner {
  kind: 'Gateway' | 'ListenerSet';
  namespace: string;
}

/** Which object declares the listener, as the fleet config and the proxies' reports name it. */
export function listenerRef(l: ListenerState): GatewayListenerRef {
  const gateway = l.listenerSet === undefined ? l.gatewayKey : listenerSetFleetName(l.listenerSet.key);
  return { gateway, listener: l.spec.name };
}

/** `Gateway ns/name listener x` or `ListenerSet ns/name listener x`, for messages. */
export function describeListener(l: ListenerState): string {
  const owner = l.listenerSet === undefined ? `Gateway ${l.gatewayKey}` : `ListenerSet ${l.listenerSet.key}`;
  return `${owner} listener ${l.spec.name}`;
}

function certificateRefs(
  owner: ListenerOwner,
  l: Listener,
  lookup: SnapshotLookup,
  verdicts: WeakMap<Secret, string | undefined>,
): { ok: boolean; verdict?: Verdict; secrets: string[] } {
  const secrets: string[] = [];
  const gwNs = owner.namespace;
  // Only a listener that ends TLS serves a certificate (a passthrough listener's backends present their own).
  const refs = terminatesTls(l) ? (l.tls?.certificateRefs ?? []) : [];
  if (terminatesTls(l) && refs.length === 0) {
    // The CRD admits an HTTPS listener with no tls, or with tls.options only: it has no certificate to serve.
    const which = l.protocol === 'HTTPS' ? 'an HTTPS listener' : 'a TLS listener in mode Terminate';
    const message = `${which} needs tls.certificateRefs naming its certificate`;
    return { ok: false, verdict: { ok: false, reason: 'InvalidCertificateRef', message }, secrets };
  }
  for (const [i, ref] of refs.entries()) {
    const ns = ref.namespace ?? gwNs;
    const id = `${ns}/${ref.name}`;
    const fail = (reason: string, message: string) => ({
      ok: false,
      verdict: { ok: false, reason, message: `certificateRefs[${i}]: ${message}` },
      secrets,
    });
    if (ref.group !== '' || ref.kind !== 'Secret') {
      return fail(
        'InvalidCertificateRef',
        `unsupported kind ${ref.group === '' ? 'core' : ref.group}/${ref.kind}`,
      );
    }
    const permitted = referenceGranted(lookup, {
      fromGroup: GATEWAY_API_GROUP,
      fromKind: owner.kind,
      fromNamespace: gwNs,
      toGroup: '',
      toKind: 'Secret',
      toNamespace: ns,
      toName: ref.name,
    });
    if (!permitted)
      return fail('RefNotPermitted', `Secret ${id} is in another namespace and no ReferenceGrant allows it`);
    const secret = lookup.secrets.get(id);
    if (secret === undefined) {
      const missing = notFound(lookup, 'Secret', ns, ref.name);
      // The Kubernetes provider lists only kubernetes.io/tls Secrets: a Secret of another type reads as absent.
      const hint = missing.endsWith(' not found')
        ? ' (certificates are read from Secrets of type kubernetes.io/tls)'
        : '';
      return fail('InvalidCertificateRef', `${missing}${hint}`);
    }
    if (secret.type !== 'kubernetes.io/tls') {
      return fail('InvalidCertificateRef', `Secret ${id} is of type ${secret.type}, not kubernetes.io/tls`);
    }
    const pems = tlsSecretPems(secret);
    if (pems === undefined)
      return fail('InvalidCertificateRef', `Secret ${id} does not hold a PEM certificate and key`);
    const unusable = certificateProblem(secret, pems, verdicts);
    if (unusable !== undefined) return fail('InvalidCertificateRef', `Secret ${id}: ${unusable}`);
    secrets.push(id);
  }
  return { ok: true, secrets };
}

export function evaluateListener(
  g: Gateway,
  index: number,
  fleet: string,
  lookup: SnapshotLookup,
  verdicts: WeakMap<Secret, string | undefined>,
): ListenerState {
  const l = g.spec.listeners[index]!;
  const base = { gateway: g, gatewayKey: nsName(g), index, spec: l, fleet, attached: [] as RouteObject[] };
  return evaluateSpec(base, { kind: 'Gateway', namespace: g.metadata.namespace ?? '' }, lookup, verdicts);
}

/**
 * Listener `specIndex` of a ListenerSet that joins Gateway `g`, as listener `index` of the Gateway's entry: its
 * certificates resolve in the ListenerSet's namespace, with ReferenceGrants from ListenerSets.
 */
export function evaluateListenerSetListener(
  g: Gateway,
  ls: ListenerSet,
  specIndex: number,
  index: number,
  fleet: string,
  lookup: SnapshotLookup,
  verdicts: WeakMap<Secret, string | undefined>,
): ListenerState {
  const l = ls.spec.listeners[specIndex]!;
  const base = {
    gateway: g,
    gatewayKey: nsName(g),
    index,
    listenerSet: { object: ls, key: nsName(ls) },
    spec: l,
    fleet,
    attached: [] as RouteObject[],
  };
  return evaluateSpec(
    base,
    { kind: 'ListenerSet', namespace: ls.metadata.namespace ?? '' },
    lookup,
    verdicts,
  );
}

type ListenerBase = Pick<
  ListenerState,
  'gateway' | 'gatewayKey' | 'index' | 'listenerSet' | 'spec' | 'fleet' | 'attached'
>;

function evaluateSpec(
  base: ListenerBase,
  owner: ListenerOwner,
  lookup: SnapshotLookup,
  verdicts: WeakMap<Secret, string | undefined>,
): ListenerState {
  const l = base.spec;
  const okRefs: Verdict = { ok: true, reason: 'ResolvedRefs', message: 'Resolved all references' };
  if (
    kindsOfProtocol(l.protocol) === undefined ||
    (l.protocol === 'HTTPS' && l.tls?.mode === 'Passthrough')
  ) {
    const what = l.protocol === 'HTTPS' ? 'HTTPS with TLS mode Passthrough' : `protocol ${l.protocol}`;
    return {
      ...base,
      accepted: {
        ok: false,
        reason: 'UnsupportedProtocol',
        message: `${what} is not supported (HTTP, HTTPS, TLS, TCP and UDP are)`,
      },
      resolvedRefs: okRefs,
      supportedKinds: [],
      certificatesOk: false,
      certificates: [],
    };
  }
  if (l.hostname !== undefined && isIP(l.hostname) !== 0) {
    return {
      ...base,
      accepted: {
        ok: false,
        reason: 'UnsupportedValue',
        message: `hostname '${l.hostname}' is an IP address; the Gateway API allows DNS names only`,
      },
      resolvedRefs: okRefs,
      supportedKinds: [],
      certificatesOk: false,
      certificates: [],
    };
  }
  const { kinds, invalid } = routeKinds(l);
  const certs = certificateRefs(owner, l, lookup, verdicts);
  let resolvedRefs = okRefs;
  if (invalid.length > 0) {
    resolvedRefs = {
      ok: false,
      reason: 'InvalidRouteKinds',
      message: `unsupported route kinds: ${invalid.join(', ')}`,
    };
  } else if (certs.verdict !== undefined) resolvedRefs = certs.verdict;
  const frontend = l.protocol === 'HTTPS' ? frontendValidation(base.gateway, l.port, lookup) : {};
  if (resolvedRefs.ok && frontend.resolvedRefs !== undefined) resolvedRefs = frontend.resolvedRefs;
  const state: ListenerState = {
    ...base,
    accepted: frontend.accepted ?? { ok: true, reason: 'Accepted', message: 'Accepted' },
    resolvedRefs,
    supportedKinds: kinds,
    certificatesOk: certs.ok,
    certificates: certs.secrets,
  };
  if (frontend.validation !== undefined) state.clientValidation = frontend.validation;
  const filtered = listenerRequestFilters(l, owner, lookup);
  if (filtered.accepted !== undefined && state.accepted.ok) state.accepted = filtered.accepted;
  if (filtered.resolvedRefs !== undefined && state.resolvedRefs.ok)
    state.resolvedRefs = filtered.resolvedRefs;
  if (filtered.filters !== undefined) state.requestFilters = filtered.filters;
  return state;
}

/**
 * Within one fleet, the first listener (oldest Gateway, then listener order; ListenerSets' listeners after every
 * Gateway's own) keeps its (port, protocol, hostname); a later one on the same port with another protocol, or with
 * the same tuple, is Conflicted. A listener of a protocol Portico does not serve never holds a port, yet is
 * Conflicted when it asks for one another protocol holds (the ListenerSet conformance tests expect that).
 */
export function markConflicts(listenersInOrder: ListenerState[]): void {
  const protocolOfPort = new Map<number, ListenerState>();
  const tuples = new Map<string, ListenerState>();
  for (const l of listenersInOrder) {
    if (!l.accepted.ok && l.accepted.reason !== 'UnsupportedProtocol') continue;
    const holder = protocolOfPort.get(l.spec.port);
    if (holder !== undefined && holder.spec.protocol !== l.spec.protocol) {
      l.conflict = {
        ok: false,
        reason: 'ProtocolConflict',
        message: `port ${l.spec.port} is already ${holder.spec.protocol} on ${describeListener(holder)}`,
      };
      continue;
    }
    if (!l.accepted.ok) continue;
    const tuple = `${l.spec.port}|${l.spec.protocol}|${l.spec.hostname ?? ''}`;
    const same = tuples.get(tuple);
    if (same !== undefined) {
      l.conflict = {
        ok: false,
        reason: 'HostnameConflict',
        message: `port ${l.spec.port} ${l.spec.protocol} hostname ${l.spec.hostname ?? '(any)'} is already used by ${describeListener(same)}`,
      };
      continue;
    }
    if (holder === undefined) protocolOfPort.set(l.spec.port, l);
    tuples.set(tuple, l);
  }
}

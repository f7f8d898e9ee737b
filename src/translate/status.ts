// Status objects for what this controller owns: its GatewayClasses, their Gateways and ListenerSets, and route
// parents.
import type { Condition } from '../api/common.js';
import type { ListenerStatus } from '../api/gateway.js';
import { clusterTrustBundlesServed, type InstalledCrds } from '../api/gateway-api-bundle.js';
import { listenerSetFleetName } from '../ir/fleet-config.js';
import type { DeployType } from '../ir/fleet-infra.js';
import { type AddressAssignment, assignAddresses } from './addresses.js';
import type { ClassState } from './classes.js';
import { condition } from './conditions.js';
import { supportedFeatures } from './features.js';
import { insecureFrontend } from './frontend-validation.js';
import { type ListenerState, listenerRef, ready } from './listeners.js';
import { type GatewayEntry, type ListenerSetEntry, ownListeners, type RouteState } from './routes.js';
import { supportedVersionVerdict } from './supported-version.js';
import type { DataPlaneState, ObjectStatus } from './types.js';

/** `installed`: the Gateway API CRDs the cluster has, when known; then the class says whether they are supported. */
export function classStatus(
  c: ClassState,
  deployType: DeployType,
  installed: InstalledCrds | undefined,
): ObjectStatus {
  const g = c.gatewayClass;
  const a = c.accepted;
  const gen = g.metadata.generation;
  const conditions = [condition('Accepted', a.ok, a.reason, a.message, gen)];
  if (installed !== undefined) {
    const v = supportedVersionVerdict(installed);
    conditions.push(condition('SupportedVersion', v.ok, v.reason, v.message, gen));
  }
  return {
    apiVersion: g.apiVersion,
    kind: 'GatewayClass',
    name: g.metadata.name,
    generation: gen,
    status: {
      conditions,
      supportedFeatures: supportedFeatures(deployType, {
        experimental: installed?.channels?.gateways === 'experimental',
        clusterTrustBundles: clusterTrustBundlesServed(installed),
      }).map((name) => ({ name })),
    },
  };
}

type FleetState = DataPlaneState['fleets'][string] | undefined;

/** The fleet's addresses this Gateway gets, for what its spec.addresses asks. */
function gatewayAddresses(gw: GatewayEntry, fleet: FleetState): AddressAssignment {
  return assignAddresses(gw.gateway.spec.addresses ?? [], fleet?.addresses ?? []);
}

/** Has a proxy of the fleet applied this Gateway's current generation, with an address to reach it? */
function programmedVerdict(gw: GatewayEntry, fleet: FleetState, addresses: AddressAssignment) {
  if (fleet === undefined || addresses.addresses.length === 0) {
    return {
      ok: false,
      reason: 'AddressNotAssigned',
      message: `No address assigned to fleet ${gw.fleet} yet`,
    };
  }
  const applied = fleet.appliedGateways[gw.key];
  const generation = gw.gateway.metadata.generation;
  if (applied === undefined || applied < generation) {
    return {
      ok: false,
      reason: 'Pending',
      message: `Waiting for a ready proxy of fleet ${gw.fleet} to apply generation ${generation}`,
    };
  }
  // Applied, yet a Gateway whose every valid listener failed to bind serves nothing: not Programmed.
  const errors = ownListeners(gw)
    .filter(ready)
    .map((l) => listenerError(l, fleet));
  const first = errors[0];
  if (first !== undefined && errors.every((e) => e !== undefined)) {
    return {
      ok: false,
      reason: 'Invalid',
      message: `No listener is programmed: listener ${first.listener}: ${first.message}`,
    };
  }
  return { ok: true, reason: 'Programmed', message: 'Programmed' };
}

/** Why a proxy of the fleet could not serve this listener (its port taken, say), if one said so. */
function listenerError(l: ListenerState, fleet: FleetState) {
  const ref = listenerRef(l);
  return fleet?.listenerErrors.find((e) => e.gateway === ref.gateway && e.listener === ref.listener);
}

function listenerStatus(
  l: ListenerState,
  gwProgrammed: { ok: boolean; reason: string; message: string },
  fleet: FleetState,
  gen: number,
): ListenerStatus {
  const error = listenerError(l, fleet);
  let programmed: Condition;
  if (!ready(l)) {
    const why = !l.accepted.ok
      ? l.accepted
      : (l.conflict ?? (l.resolvedRefs.ok ? { message: 'no supported route kinds' } : l.resolvedRefs));
    programmed = condition('Programmed', false, 'Invalid', why.message, gen);
  } else if (error !== undefined) {
    programmed = condition('Programmed', false, 'Invalid', error.message, gen);
  } else if (!gwProgrammed.ok) {
    const reason = gwProgrammed.reason === 'Invalid' ? 'Invalid' : 'Pending';
    programmed = condition('Programmed', false, reason, gwProgrammed.message, gen);
  } else programmed = condition('Programmed', true, 'Programmed', 'Programmed', gen);
  const conflicted =
    l.conflict === undefined
      ? condition('Conflicted', false, 'NoConflicts', 'No conflicts', gen)
      : condition('Conflicted', true, l.conflict.reason, l.conflict.message, gen);
  return {
    name: l.spec.name,
    supportedKinds: l.supportedKinds.map((k) => ({ group: k.group, kind: k.kind })),
    attachedRoutes: l.attached.length,
    conditions: [
      condition('Accepted', l.accepted.ok, l.accepted.reason, l.accepted.message, gen),
      programmed,
      condition('ResolvedRefs', l.resolvedRefs.ok, l.resolvedRefs.reason, l.resolvedRefs.message, gen),
      conflicted,
    ],
  };
}

/**
 * Why an address the Gateway asks for in spec.addresses is of a type Portico cannot give (IPAddress is the one it
 * can); undefined when every one is an IPAddress. An IPAddress without a value asks for any address.
 */
function unsupportedAddressOf(g: GatewayEntry['gateway']): string | undefined {
  const i = (g.spec.addresses ?? []).findIndex((a) => (a.type ?? 'IPAddress') !== 'IPAddress');
  if (i === -1) return undefined;
  return `spec.addresses[${i}]: type ${g.spec.addresses![i]!.type} is not supported (IPAddress is)`;
}

function unmetList(a: AddressAssignment): string {
  return a.unmet.map((u) => `spec.addresses[${u.index}]: ${u.why}`).join('; ');
}

/**
 * Programmed=False for the addresses asked for: one asked for by value that the fleet does not have (its load
 * balancer has not given it, or cannot), or none of them met. Undefined when they are fine.
 */
function addressVerdict(requested: number, a: AddressAssignment) {
  const byValue = a.unmet.find((u) => u.byValue);
  if (byValue !== undefined) {
    const message = `spec.addresses[${byValue.index}]: ${byValue.why} (on Kubernetes the fleet's Service asks for it)`;
    return { ok: false, reason: 'AddressNotUsable', message };
  }
  if (requested > 0 && a.addresses.length === 0)
    return { ok: false, reason: 'AddressNotAssigned', message: unmetList(a) };
  return undefined;
}

/** AddressesAssigned (GEP-5093): whether every entry of spec.addresses, or the default choice, got an address. */
function addressesAssigned(requested: number, a: AddressAssignment, gen: number): Condition {
  if (a.unmet.length === 0 && a.addresses.length > 0)
    return condition('AddressesAssigned', true, 'AddressesAssigned', 'Every address is assigned', gen);
  if (a.addresses.length > 0)
    return condition('AddressesAssigned', false, 'PartiallyAssigned', `Unmet: ${unmetList(a)}`, gen);
  const message = requested === 0 ? 'No address assigned to the fleet yet' : `Unmet: ${unmetList(a)}`;
  return condition('AddressesAssigned', false, 'NotAssigned', message, gen);
}

/** Why the Gateway's parameters (its class's or its own) cannot be used; undefined when they can. */
function parametersRefusal(gw: GatewayEntry): string | undefined {
  const c = gw.classState;
  if (!c.accepted.ok) {
    const held = c.holding === true ? "; its fleets keep serving with the class's last good parameters" : '';
    return `GatewayClass ${c.gatewayClass.metadata.name} is not accepted: ${c.accepted.message}${held}`;
  }
  return gw.invalidParameters;
}

/** Whether its fleet is served although its parameters are refused (with the last good, or its class's). */
function servedWithout(gw: GatewayEntry): boolean {
  return gw.classState.accepted.ok || gw.classState.holding === true;
}

/** `routability`: whether status addresses say theirs (the installed Gateway CRD keeps the field). */
export function gatewayStatus(
  gw: GatewayEntry,
  dataPlane: DataPlaneState | undefined,
  routability: boolean,
): ObjectStatus {
  const g = gw.gateway;
  const gen = g.metadata.generation;
  const fleet = dataPlane?.fleets[gw.fleet];
  const assigned = gatewayAddresses(gw, fleet);
  const requested = g.spec.addresses?.length ?? 0;
  const own = ownListeners(gw);
  const readyCount = own.filter(ready).length;
  let accepted: Condition;
  let programmed: Condition;
  let gwProgrammed = { ok: false, reason: 'Invalid', message: '' };
  const refused = parametersRefusal(gw);
  const unsupportedAddress = unsupportedAddressOf(g);
  if (refused !== undefined && !servedWithout(gw)) {
    accepted = condition('Accepted', false, 'InvalidParameters', refused, gen);
    programmed = condition('Programmed', false, 'Invalid', refused, gen);
    gwProgrammed.message = refused;
  } else if (unsupportedAddress !== undefined) {
    // Its fleet serves on as before; the status says the Gateway as asked for cannot be.
    accepted = condition('Accepted', false, 'UnsupportedAddress', unsupportedAddress, gen);
    programmed = condition('Programmed', false, 'Invalid', unsupportedAddress, gen);
    gwProgrammed.message = unsupportedAddress;
  } else if (readyCount === 0) {
    accepted =
      refused === undefined
        ? condition('Accepted', false, 'ListenersNotValid', 'No listener is valid', gen)
        : condition('Accepted', false, 'InvalidParameters', refused, gen);
    programmed = condition('Programmed', false, 'Invalid', 'No listener is valid', gen);
  } else {
    const invalid = own.length - readyCount;
    if (refused !== undefined) accepted = condition('Accepted', false, 'InvalidParameters', refused, gen);
    else if (invalid > 0) {
      const message = `${invalid} of ${own.length} listeners are not valid`;
      accepted = condition('Accepted', true, 'ListenersNotValid', message, gen);
    } else accepted = condition('Accepted', true, 'Accepted', gw.unusedParameters ?? 'Accepted', gen);
    gwProgrammed =
      gw.infraConflict === undefined
        ? (addressVerdict(requested, assigned) ?? programmedVerdict(gw, fleet, assigned))
        : { ok: false, reason: 'Invalid', message: gw.infraConflict };
    programmed = condition('Programmed', gwProgrammed.ok, gwProgrammed.reason, gwProgrammed.message, gen);
  }
  const status: Record<string, unknown> = {};
  const served = servedWithout(gw) && readyCount > 0;
  if (served && fleet !== undefined && assigned.addresses.length > 0) {
    status.addresses = assigned.addresses.map((a) => (routability ? a : { type: a.type, value: a.value }));
  }
  const client = gw.backendClientCertificate?.verdict;
  const conditions = [accepted, programmed];
  if (served) conditions.push(addressesAssigned(requested, assigned, gen));
  if (client !== undefined)
    conditions.push(condition('ResolvedRefs', client.ok, client.reason, client.message, gen));
  // Said while any port lets clients without a valid certificate in; gone once none does.
  if (insecureFrontend(g)) {
    const message =
      'Client certificate validation lets clients without a valid certificate in (AllowInsecureFallback)';
    conditions.push(condition('InsecureFrontendValidationMode', true, 'ConfigurationChanged', message, gen));
  }
  status.conditions = conditions;
  status.listeners = own.map((l) => listenerStatus(l, gwProgrammed, fleet, gen));
  // Said by Gateways that admit ListenerSets: those with a listener that joined (Accepted=True).
  if ((g.spec.allowedListeners?.namespaces.from ?? 'None') !== 'None' || gw.listenerSets.length > 0) {
    status.attachedListenerSets = gw.listenerSets.filter((ls) => ls.listeners.some(ready)).length;
  }
  return {
    apiVersion: g.apiVersion,
    kind: 'Gateway',
    namespace: g.metadata.namespace ?? 'default',
    name: g.metadata.name,
    generation: gen,
    status,
  };
}

// A reused RouteState (unchanged route and parents) keeps its status object, so the provider can tell
// unchanged statuses by identity instead of comparing their text.
export function routeStatus(
  rs: RouteState,
  routeStatusMemo: WeakMap<RouteState, ObjectStatus>,
): ObjectStatus | undefined {
  if (rs.parents.length === 0) return undefined;
  let status = routeStatusMemo.get(rs);
  if (status === undefined) {
    status = routeStatusUncached(rs);
    routeStatusMemo.set(rs, status);
  }
  return status;
}

function routeStatusUncached(rs: RouteState): ObjectStatus {
  const r = rs.route;
  return {
    apiVersion: r.apiVersion,
    kind: r.kind,
    namespace: r.metadata.namespace ?? 'default',
    name: r.metadata.name,
    generation: r.metadata.generation,
    status: { parents: rs.parents },
  };
}

/** Has a proxy of the Gateway's fleet applied the ListenerSet's current generation with the Gateway's? */
function listenerSetProgrammed(ls: ListenerSetEntry, fleet: FleetState) {
  const gw = ls.gateway;
  const parent =
    gw.infraConflict === undefined
      ? programmedVerdict(gw, fleet, gatewayAddresses(gw, fleet))
      : { ok: false, reason: 'Invalid', message: gw.infraConflict };
  if (!parent.ok) {
    const message = `Gateway ${gw.key} is not programmed: ${parent.message}`;
    return { ok: false, reason: 'ParentNotProgrammed', message };
  }
  const generation = ls.listenerSet.metadata.generation;
  const applied = fleet?.appliedGateways[listenerSetFleetName(ls.key)];
  if (applied === undefined || applied < generation) {
    const message = `Waiting for a ready proxy of fleet ${gw.fleet} to apply generation ${generation}`;
    return { ok: false, reason: 'Pending', message };
  }
  const errors = ls.listeners.filter(ready).map((l) => listenerError(l, fleet));
  const first = errors[0];
  if (first !== undefined && errors.every((e) => e !== undefined)) {
    const message = `No listener is programmed: listener ${first.listener}: ${first.message}`;
    return { ok: false, reason: 'Invalid', message };
  }
  return { ok: true, reason: 'Programmed', message: 'Programmed' };
}

/** A ListenerSet listener: a conflict is its Accepted and Programmed reason, as the ListenerSet tests expect. */
function listenerEntryStatus(
  l: ListenerState,
  setProgrammed: { ok: boolean; reason: string; message: string },
  fleet: FleetState,
  gen: number,
): ListenerStatus {
  const status = listenerStatus(l, setProgrammed, fleet, gen);
  const conflict = l.conflict;
  if (conflict === undefined) return status;
  const conditions = status.conditions.map((c) =>
    c.type === 'Accepted' || c.type === 'Programmed'
      ? condition(c.type, false, conflict.reason, conflict.message, gen)
      : c,
  );
  return { ...status, conditions };
}

export function listenerSetStatus(ls: ListenerSetEntry, dataPlane: DataPlaneState | undefined): ObjectStatus {
  const o = ls.listenerSet;
  const gen = o.metadata.generation;
  const fleet = dataPlane?.fleets[ls.gateway.fleet];
  const base = {
    apiVersion: o.apiVersion,
    kind: 'ListenerSet',
    namespace: o.metadata.namespace ?? 'default',
    name: o.metadata.name,
    generation: gen,
  };
  if (ls.refused !== undefined) {
    const { reason, message } = ls.refused;
    const conditions = [
      condition('Accepted', false, reason, message, gen),
      condition('Programmed', false, reason, message, gen),
    ];
    return { ...base, status: { conditions } };
  }
  const readyCount = ls.listeners.filter(ready).length;
  let accepted: Condition;
  let programmed: Condition;
  let setProgrammed = { ok: false, reason: 'Invalid', message: 'No listener is valid' };
  if (readyCount === 0) {
    accepted = condition('Accepted', false, 'ListenersNotValid', 'No listener is valid', gen);
    programmed = condition('Programmed', false, 'ListenersNotValid', 'No listener is valid', gen);
  } else {
    const invalid = ls.listeners.length - readyCount;
    accepted =
      invalid > 0
        ? condition(
            'Accepted',
            true,
            'ListenersNotValid',
            `${invalid} of ${ls.listeners.length} listeners are not valid`,
            gen,
          )
        : condition('Accepted', true, 'Accepted', 'Accepted', gen);
    setProgrammed = listenerSetProgrammed(ls, fleet);
    programmed = condition('Programmed', setProgrammed.ok, setProgrammed.reason, setProgrammed.message, gen);
  }
  const listeners = ls.listeners.map((l) => listenerEntryStatus(l, setProgrammed, fleet, gen));
  return { ...base, status: { conditions: [accepted, programmed], listeners } };
}

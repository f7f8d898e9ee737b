// GatewayClasses this controller owns: accepted unless their parametersRef is broken; merge mode from it.
import { type DataPlaneProxy, PORTICO_GROUP } from '../api/data-plane-proxy.js';
import type { GatewayClass } from '../api/gateway-class.js';
import type { ResourceSnapshot } from '../api/snapshot.js';
import type { FleetParameters } from '../ir/fleet-infra.js';
import type { Verdict } from './conditions.js';
import { notFound, type SnapshotLookup } from './lookup.js';
import { proxyParameters } from './proxy-parameters.js';

export interface ClassState {
  gatewayClass: GatewayClass;
  accepted: Verdict;
  /** Its DataPlaneProxy has mergeGateways: all its Gateways share the fleet named after the class. */
  merged: boolean;
  /** Its DataPlaneProxy, when it has a valid one: what a Gateway's own is laid over. */
  proxy?: DataPlaneProxy;
  /** What its DataPlaneProxy gives every fleet of the class. */
  parameters: FleetParameters;
  /** Not accepted now, but its fleets keep serving with the last good parameters (those above). */
  holding?: true;
}

function evaluate(c: GatewayClass, lookup: SnapshotLookup): ClassState {
  const ref = c.spec.parametersRef;
  const accepted: Verdict = { ok: true, reason: 'Accepted', message: 'Accepted' };
  if (ref === undefined) return { gatewayClass: c, accepted, merged: false, parameters: {} };
  const invalid = (message: string): ClassState => ({
    gatewayClass: c,
    accepted: { ok: false, reason: 'InvalidParameters', message },
    merged: false,
    parameters: {},
  });
  if (ref.group !== PORTICO_GROUP || ref.kind !== 'DataPlaneProxy') {
    return invalid(
      `parametersRef must refer to a ${PORTICO_GROUP} DataPlaneProxy, not ${ref.group}/${ref.kind}`,
    );
  }
  if (ref.namespace === undefined) return invalid('parametersRef.namespace is required for a DataPlaneProxy');
  const proxy = lookup.dataPlaneProxies.get(`${ref.namespace}/${ref.name}`);
  if (proxy === undefined) return invalid(notFound(lookup, 'DataPlaneProxy', ref.namespace, ref.name));
  const verdict = proxyParameters(proxy.spec);
  if (!verdict.ok) return invalid(`DataPlaneProxy ${ref.namespace}/${ref.name}: ${verdict.problem}`);
  return {
    gatewayClass: c,
    accepted,
    merged: proxy.spec.mergeGateways,
    proxy,
    parameters: verdict.parameters,
  };
}

/**
 * Only the classes whose controllerName is ours; the rest are ignored entirely (no status). `lastGood` (the
 * translate cache's) remembers each class's last accepted state.
 */
export function evaluateClasses(
  snapshot: ResourceSnapshot,
  lookup: SnapshotLookup,
  controllerName: string,
  lastGood?: Map<string, ClassState>,
): Map<string, ClassState> {
  const out = new Map<string, ClassState>();
  const ours = snapshot.gatewayClasses.filter((c) => c.spec.controllerName === controllerName);
  ours.sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0));
  for (const c of ours) {
    const name = c.metadata.name;
    let state = evaluate(c, lookup);
    const held = lastGood?.get(name);
    if (state.accepted.ok) lastGood?.set(name, state);
    // A class whose parameters broke keeps its fleets as they were: they keep serving until it is fixed.
    else if (held !== undefined)
      state = { ...held, gatewayClass: c, accepted: state.accepted, holding: true };
    out.set(name, state);
  }
  if (lastGood !== undefined)
    for (const name of [...lastGood.keys()]) if (!out.has(name)) lastGood.delete(name);
  return out;
}

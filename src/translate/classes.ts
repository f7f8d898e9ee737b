// GatewayClasses this controller owns: accepted unless their parametersRef is broken; merge mode from it.
import { type DataPlaneProxy, PORTICO_GROUP } from '../api/data-plane-proxy.js';
import type { GatewayClass } from '../api/gateway-class.js';
import type { ResourceSnapshot } from '../api/snapshot.js';
import { ACCESS_LOG_FIELDS, type FleetAccessLog, isAccessLogField } from '../ir/access-log.js';
import type { FleetShape } from '../ir/fleet-shape.js';
import { type FleetTracing, tracingEndpointProblem } from '../ir/tracing.js';
import type { LogLevel } from '../platform/log-line.js';
import type { Verdict } from './conditions.js';
import { fleetShapeOf, fleetShapeProblem } from './fleet-shape.js';
import { notFound, type SnapshotLookup } from './lookup.js';

export interface ClassState {
  gatewayClass: GatewayClass;
  accepted: Verdict;
  /** Its DataPlaneProxy has mergeGateways: all its Gateways share the fleet named after the class. */
  merged: boolean;
  /** Its DataPlaneProxy's workers per proxy, when set. */
  workers?: number;
  /** Its DataPlaneProxy's access log, when set. */
  accessLog?: FleetAccessLog;
  /** Its DataPlaneProxy's spec.kubernetes, checked, when set. */
  kubernetes?: FleetShape;
  /** Its DataPlaneProxy's proxy log level, when set. */
  logLevel?: LogLevel;
  tracing?: FleetTracing;
}

function evaluate(c: GatewayClass, lookup: SnapshotLookup): ClassState {
  const ref = c.spec.parametersRef;
  if (ref === undefined) {
    return {
      gatewayClass: c,
      accepted: { ok: true, reason: 'Accepted', message: 'Accepted' },
      merged: false,
    };
  }
  const invalid = (message: string): ClassState => ({
    gatewayClass: c,
    accepted: { ok: false, reason: 'InvalidParameters', message },
    merged: false,
  });
  if (ref.group !== PORTICO_GROUP || ref.kind !== 'DataPlaneProxy') {
    return invalid(
      `parametersRef must refer to a ${PORTICO_GROUP} DataPlaneProxy, not ${ref.group}/${ref.kind}`,
    );
  }
  if (ref.namespace === undefined) return invalid('parametersRef.namespace is required for a DataPlaneProxy');
  const proxy = lookup.dataPlaneProxies.get(`${ref.namespace}/${ref.name}`);
  if (proxy === undefined) return invalid(notFound(lookup, 'DataPlaneProxy', ref.namespace, ref.name));
  const state: ClassState = {
    gatewayClass: c,
    accepted: { ok: true, reason: 'Accepted', message: 'Accepted' },
    merged: proxy.spec.mergeGateways,
  };
  if (proxy.spec.workers !== undefined) state.workers = proxy.spec.workers;
  const accessLog = proxy.spec.telemetry?.accessLog;
  if (accessLog !== undefined) {
    const unknown = accessLog.fields?.findIndex((f) => !isAccessLogField(f)) ?? -1;
    if (unknown >= 0)
      return invalid(
        `DataPlaneProxy ${ref.namespace}/${ref.name}: spec.telemetry.accessLog.fields[${unknown}]: unknown field ` +
          `'${accessLog.fields?.[unknown]}' (known: ${ACCESS_LOG_FIELDS.join(', ')})`,
      );
    state.accessLog = fleetAccessLog(accessLog);
  }
  if (proxy.spec.logLevel !== undefined) state.logLevel = proxy.spec.logLevel;
  const tracing = proxy.spec.telemetry?.tracing;
  if (tracing !== undefined) {
    const problem = tracingEndpointProblem(tracing.endpoint);
    if (problem !== undefined)
      return invalid(
        `DataPlaneProxy ${ref.namespace}/${ref.name}: spec.telemetry.tracing.endpoint: ${problem}`,
      );
    state.tracing = {
      endpoint: tracing.endpoint,
      ...(tracing.sampling === 100 ? {} : { sampling: tracing.sampling }),
    };
  }
  const kubernetes = proxy.spec.kubernetes;
  if (kubernetes !== undefined) {
    const problem = fleetShapeProblem(kubernetes);
    if (problem !== undefined) return invalid(`DataPlaneProxy ${ref.namespace}/${ref.name}: ${problem}`);
    const shape = fleetShapeOf(kubernetes);
    if (shape !== undefined) state.kubernetes = shape;
  }
  return state;
}

function fleetAccessLog(
  spec: NonNullable<NonNullable<DataPlaneProxy['spec']['telemetry']>['accessLog']>,
): FleetAccessLog {
  if (spec.disabled) return { format: 'off' };
  const log: FleetAccessLog = { format: spec.format === 'Text' ? 'text' : 'json' };
  if (spec.fields !== undefined) log.fields = spec.fields.filter(isAccessLogField);
  if (spec.sampling !== 100) log.sampling = spec.sampling;
  return log;
}

/** Only the classes whose controllerName is ours; the rest are ignored entirely (no status). */
export function evaluateClasses(
  snapshot: ResourceSnapshot,
  lookup: SnapshotLookup,
  controllerName: string,
): Map<string, ClassState> {
  const out = new Map<string, ClassState>();
  const ours = snapshot.gatewayClasses.filter((c) => c.spec.controllerName === controllerName);
  ours.sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0));
  for (const c of ours) out.set(c.metadata.name, evaluate(c, lookup));
  return out;
}

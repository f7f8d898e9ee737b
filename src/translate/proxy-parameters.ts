// What a DataPlaneProxy gives a fleet (workers, access log, log level, tracing, Kubernetes shape), checked; and a
// Gateway's own DataPlaneProxy laid field by field over its class's.
import type { DataPlaneProxy } from '../api/data-plane-proxy.js';
import { ACCESS_LOG_FIELDS, type FleetAccessLog, isAccessLogField } from '../ir/access-log.js';
import type { FleetParameters } from '../ir/fleet-infra.js';
import { tracingEndpointProblem } from '../ir/tracing.js';
import { fleetShapeOf, fleetShapeProblem } from './fleet-shape.js';

export type DataPlaneProxySpec = DataPlaneProxy['spec'];

export type ParametersVerdict = { ok: true; parameters: FleetParameters } | { ok: false; problem: string };

/** The parameters a spec gives, or the first field it gets wrong (named from `spec.`). */
export function proxyParameters(spec: DataPlaneProxySpec): ParametersVerdict {
  const parameters: FleetParameters = {};
  if (spec.workers !== undefined) parameters.workers = spec.workers;
  if (spec.drainSeconds !== undefined) parameters.drainSeconds = spec.drainSeconds;
  const accessLog = spec.telemetry?.accessLog;
  if (accessLog !== undefined) {
    const unknown = accessLog.fields?.findIndex((f) => !isAccessLogField(f)) ?? -1;
    if (unknown >= 0) {
      const problem = `spec.telemetry.accessLog.fields[${unknown}]: unknown field '${accessLog.fields?.[unknown]}' (known: ${ACCESS_LOG_FIELDS.join(', ')})`;
      return { ok: false, problem };
    }
    parameters.accessLog = fleetAccessLog(accessLog);
  }
  if (spec.logLevel !== undefined) parameters.logLevel = spec.logLevel;
  const tracing = spec.telemetry?.tracing;
  if (tracing !== undefined) {
    const problem = tracingEndpointProblem(tracing.endpoint);
    if (problem !== undefined) return { ok: false, problem: `spec.telemetry.tracing.endpoint: ${problem}` };
    const sampling = tracing.sampling ?? 100;
    parameters.tracing = { endpoint: tracing.endpoint, ...(sampling === 100 ? {} : { sampling }) };
  }
  const kubernetes = spec.kubernetes;
  if (kubernetes !== undefined) {
    const problem = fleetShapeProblem(kubernetes, spec.drainSeconds);
    if (problem !== undefined) return { ok: false, problem };
    const shape = fleetShapeOf(kubernetes);
    if (shape !== undefined) parameters.kubernetes = shape;
  }
  return { ok: true, parameters };
}

type AccessLogSpec = NonNullable<NonNullable<DataPlaneProxySpec['telemetry']>['accessLog']>;

function fleetAccessLog(spec: AccessLogSpec): FleetAccessLog {
  if (spec.disabled === true) return { format: 'off' };
  const log: FleetAccessLog = { format: spec.format === 'Text' ? 'text' : 'json' };
  if (spec.fields !== undefined) log.fields = spec.fields.filter(isAccessLogField);
  if (spec.sampling !== undefined && spec.sampling !== 100) log.sampling = spec.sampling;
  if (spec.redactQueryParameters !== undefined && spec.redactQueryParameters.length > 0)
    log.redactQueryParameters = [...spec.redactQueryParameters];
  return log;
}

type Json = { [field: string]: unknown };

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Fields that exclude each other (spec.kubernetes' one-of choices): a Gateway that sets one drops the
 * class's others, so its choice replaces the class's instead of clashing with it.
 */
const EXCLUSIVE: Record<string, readonly (readonly string[])[]> = {
  kubernetes: [
    ['deployment', 'daemonSet'],
    ['daemonSet', 'horizontalPodAutoscaler'],
  ],
  'kubernetes.podDisruptionBudget': [['minAvailable', 'maxUnavailable']],
};
/** Objects taken whole from the Gateway when it sets them: their parts only make sense together. */
const WHOLE = new Set([
  'kubernetes.deployment.strategy',
  'kubernetes.daemonSet.updateStrategy',
  'kubernetes.horizontalPodAutoscaler.behavior',
  'kubernetes.pod.affinity',
  'kubernetes.pod.securityContext.seccompProfile',
  'kubernetes.container.securityContext.capabilities',
  'kubernetes.container.securityContext.seccompProfile',
]);

function layered(under: Json, over: Json, at: string): Json {
  const out: Json = { ...under };
  for (const group of EXCLUSIVE[at] ?? []) {
    if (group.some((f) => over[f] !== undefined))
      for (const f of group) if (over[f] === undefined) delete out[f];
  }
  for (const [field, value] of Object.entries(over)) {
    if (value === undefined) continue;
    const path = at === '' ? field : `${at}.${field}`;
    const below = out[field];
    out[field] = isObject(value) && isObject(below) && !WHOLE.has(path) ? layered(below, value, path) : value;
  }
  return out;
}

/**
 * A Gateway's DataPlaneProxy laid over its class's, field by field: objects merge, everything else (a value, a
 * list) is the Gateway's where it sets it. Its mergeGateways is not taken (only a class merges Gateways).
 */
export function layeredProxySpec(
  classSpec: DataPlaneProxySpec | undefined,
  gatewaySpec: DataPlaneProxySpec,
): DataPlaneProxySpec {
  const { mergeGateways: _ignored, ...over } = gatewaySpec;
  const under = classSpec ?? {};
  const spec = layered(under as Json, over as Json, '') as DataPlaneProxySpec;
  const mine = over.kubernetes;
  const k = spec.kubernetes;
  // A fixed replica count and an autoscaler exclude each other too: the Gateway's choice wins.
  if (
    k !== undefined &&
    mine?.horizontalPodAutoscaler !== undefined &&
    k.deployment?.replicas !== undefined
  ) {
    const { replicas: _replicas, ...deployment } = k.deployment;
    spec.kubernetes = { ...k, deployment };
  }
  if (
    k !== undefined &&
    mine?.deployment?.replicas !== undefined &&
    k.horizontalPodAutoscaler !== undefined
  ) {
    const { horizontalPodAutoscaler: _hpa, ...rest } = k;
    spec.kubernetes = rest;
  }
  spec.mergeGateways = classSpec?.mergeGateways ?? false;
  return spec;
}

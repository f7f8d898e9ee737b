// A Gateway's own parameters: spec.infrastructure.parametersRef names a DataPlaneProxy in the Gateway's namespace,
// laid field by field over its class's. A merged class's Gateways share one fleet, so they take the class's.
import { PORTICO_GROUP } from '../api/data-plane-proxy.js';
import type { Gateway } from '../api/gateway.js';
import type { DeployType, FleetParameters } from '../ir/fleet-infra.js';
import type { ClassState } from './classes.js';
import { notFound, type SnapshotLookup } from './lookup.js';
import { type DataPlaneProxySpec, layeredProxySpec, proxyParameters } from './proxy-parameters.js';

const AT = 'spec.infrastructure.parametersRef';

export type GatewayParameters =
  | {
      ok: true;
      parameters: FleetParameters;
      /** Why a valid reference is not used. */
      unused?: string;
    }
  | { ok: false; problem: string };

/**
 * In Controller Namespace Mode a Gateway's fleet runs in the controller's namespace, where a Gateway's owner may
 * not reach Secrets or ConfigMaps: the fields that would name them are the class's alone.
 */
function controllerNamespaceProblem(spec: DataPlaneProxySpec): string | undefined {
  const k = spec.kubernetes;
  if (k?.pod?.imagePullSecrets !== undefined)
    return "spec.kubernetes.pod.imagePullSecrets: names Secrets in the controller's namespace, which only the GatewayClass's DataPlaneProxy may";
  const from = (k?.container?.env ?? []).findIndex((e) => e.valueFrom !== undefined);
  if (from >= 0)
    return `spec.kubernetes.container.env[${from}].valueFrom: reads objects in the controller's namespace, which only the GatewayClass's DataPlaneProxy may`;
  return undefined;
}

export function gatewayParameters(
  g: Gateway,
  classState: ClassState,
  lookup: SnapshotLookup,
  deployType: DeployType,
): GatewayParameters {
  const ref = g.spec.infrastructure?.parametersRef;
  if (ref === undefined) return { ok: true, parameters: classState.parameters };
  const className = classState.gatewayClass.metadata.name;
  if (classState.merged) {
    const unused = `${AT} is not used: GatewayClass ${className} merges its Gateways into one fleet, which takes the class's parameters`;
    return { ok: true, parameters: classState.parameters, unused };
  }
  if (ref.group !== PORTICO_GROUP || ref.kind !== 'DataPlaneProxy')
    return {
      ok: false,
      problem: `${AT}: must refer to a ${PORTICO_GROUP} DataPlaneProxy, not ${ref.group || 'core'}/${ref.kind}`,
    };
  const namespace = g.metadata.namespace ?? 'default';
  const own = lookup.dataPlaneProxies.get(`${namespace}/${ref.name}`);
  if (own === undefined)
    return { ok: false, problem: `${AT}: ${notFound(lookup, 'DataPlaneProxy', namespace, ref.name)}` };
  const id = `${AT}: DataPlaneProxy ${namespace}/${ref.name}`;
  if (own.spec.mergeGateways)
    return {
      ok: false,
      problem: `${id}: spec.mergeGateways: only a GatewayClass's DataPlaneProxy merges Gateways`,
    };
  const alone = proxyParameters(own.spec);
  if (!alone.ok) return { ok: false, problem: `${id}: ${alone.problem}` };
  const reach = deployType === 'GatewayNamespace' ? undefined : controllerNamespaceProblem(own.spec);
  if (reach !== undefined) return { ok: false, problem: `${id}: ${reach}` };
  const layered = proxyParameters(layeredProxySpec(classState.proxy?.spec, own.spec));
  if (!layered.ok) {
    const under = classState.proxy === undefined ? '' : ` over GatewayClass ${className}'s`;
    return { ok: false, problem: `${id}${under}: ${layered.problem}` };
  }
  return { ok: true, parameters: layered.parameters };
}

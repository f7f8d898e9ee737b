// Infrastructure specs per fleet: names, labels and ports of the Kubernetes objects (DESIGN.md §1, §3).
import type { FleetConfig } from '../ir/fleet-config.js';
import { fleetInfraName } from './naming.js';
import type { GatewayEntry } from './routes.js';
import type { DeployType, FleetInfra } from './types.js';

export const COMMON_INFRA_LABELS: Readonly<Record<string, string>> = {
  'app.kubernetes.io/name': 'portico-proxy',
  'app.kubernetes.io/component': 'proxy',
  'app.kubernetes.io/managed-by': 'portico-gateway',
};
export const OWNING_GATEWAY_NAMESPACE_LABEL = 'gateway.portico.io/owning-gateway-namespace';
export const OWNING_GATEWAY_NAME_LABEL = 'gateway.portico.io/owning-gateway-name';
export const OWNING_GATEWAYCLASS_LABEL = 'gateway.portico.io/owning-gatewayclass';
/** The Gateway API's own label for infrastructure made for one Gateway. */
export const GATEWAY_NAME_LABEL = 'gateway.networking.k8s.io/gateway-name';

/** Ports below 1024 bind at port + 10000 inside the pod, so the proxy needs no privilege. */
export function containerPort(port: number): number {
  return port < 1024 ? port + 10000 : port;
}

export function fleetInfra(
  config: FleetConfig,
  gateways: GatewayEntry[],
  merged: boolean,
  controllerNamespace: string,
  deployType: DeployType,
): FleetInfra {
  const labels: Record<string, string> = { ...COMMON_INFRA_LABELS };
  const first = gateways[0]!;
  if (merged) labels[OWNING_GATEWAYCLASS_LABEL] = first.classState.gatewayClass.metadata.name;
  else {
    labels[OWNING_GATEWAY_NAMESPACE_LABEL] = first.gateway.metadata.namespace ?? 'default';
    labels[OWNING_GATEWAY_NAME_LABEL] = first.gateway.metadata.name;
  }
  // A merged fleet spans namespaces, so it stays in the controller namespace even in Gateway Namespace Mode.
  const inGatewayNamespace = deployType === 'GatewayNamespace' && !merged;
  const infrastructure = merged ? undefined : first.gateway.spec.infrastructure;
  const propagated = merged
    ? { labels: {}, annotations: {} }
    : {
        labels: { ...infrastructure?.labels, [GATEWAY_NAME_LABEL]: first.gateway.metadata.name },
        annotations: { ...infrastructure?.annotations },
      };
  const infra: FleetInfra = {
    fleet: config.fleet,
    name: fleetInfraName(config.fleet),
    namespace: inGatewayNamespace ? (first.gateway.metadata.namespace ?? 'default') : controllerNamespace,
    labels,
    propagated,
    gateways: config.gateways.map((g) => g.name),
    ports: config.listeners
      .map((l) => ({
        name: `${l.protocol.toLowerCase()}-${l.port}`,
        port: l.port,
        protocol: 'TCP' as const,
        containerPort: containerPort(l.port),
      }))
      .sort((a, b) => a.port - b.port),
  };
  if (first.classState.workers !== undefined) infra.workers = first.classState.workers;
  if (inGatewayNamespace) {
    const owner: { gateway: string; uid?: string } = { gateway: first.key };
    if (first.gateway.metadata.uid !== undefined) owner.uid = first.gateway.metadata.uid;
    infra.owner = owner;
  }
  return infra;
}

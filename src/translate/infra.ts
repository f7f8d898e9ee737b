// Infrastructure specs per fleet: names, labels and ports of the Kubernetes objects (docs/architecture.md, Names).
import { type FleetConfig, listenerSetOfFleetName } from '../ir/fleet-config.js';
import {
  COMMON_INFRA_LABELS,
  containerPort,
  type DeployType,
  type FleetInfra,
  fleetInfraName,
  GATEWAY_NAME_LABEL,
  labelValue,
  OWNING_GATEWAY_NAME_LABEL,
  OWNING_GATEWAY_NAMESPACE_LABEL,
  OWNING_GATEWAYCLASS_LABEL,
} from '../ir/fleet-infra.js';
import type { GatewayEntry } from './routes.js';

export function fleetInfra(
  config: FleetConfig,
  gateways: GatewayEntry[],
  merged: boolean,
  controllerNamespace: string,
  deployType: DeployType,
): FleetInfra {
  const labels: Record<string, string> = { ...COMMON_INFRA_LABELS };
  const first = gateways[0]!;
  // Names may be longer than a label value (253 against 63): labelValue keeps them apart by hash.
  if (merged) labels[OWNING_GATEWAYCLASS_LABEL] = labelValue(first.classState.gatewayClass.metadata.name);
  else {
    labels[OWNING_GATEWAY_NAMESPACE_LABEL] = first.gateway.metadata.namespace ?? 'default';
    labels[OWNING_GATEWAY_NAME_LABEL] = labelValue(first.gateway.metadata.name);
  }
  // A merged fleet spans namespaces, so it stays in the controller namespace even in Gateway Namespace Mode.
  const inGatewayNamespace = deployType === 'GatewayNamespace' && !merged;
  const infrastructure = merged ? undefined : first.gateway.spec.infrastructure;
  const propagated = merged
    ? { labels: {}, annotations: {} }
    : {
        labels: { ...infrastructure?.labels, [GATEWAY_NAME_LABEL]: labelValue(first.gateway.metadata.name) },
        annotations: { ...infrastructure?.annotations },
      };
  const infra: FleetInfra = {
    fleet: config.fleet,
    name: fleetInfraName(config.fleet),
    namespace: inGatewayNamespace ? (first.gateway.metadata.namespace ?? 'default') : controllerNamespace,
    labels,
    propagated,
    gateways: config.gateways.map((g) => g.name).filter((name) => listenerSetOfFleetName(name) === undefined),
    ports: config.listeners
      .map((l) => ({
        name: `${l.protocol.toLowerCase()}-${l.port}`,
        port: l.port,
        protocol: l.protocol === 'UDP' ? ('UDP' as const) : ('TCP' as const),
        containerPort: containerPort(l.port),
      }))
      .sort((a, b) => a.port - b.port),
  };
  Object.assign(infra, requestedAddresses(first.gateway.spec.addresses ?? []));
  const p = first.parameters;
  if (p.workers !== undefined) infra.workers = p.workers;
  if (p.drainSeconds !== undefined) infra.drainSeconds = p.drainSeconds;
  if (p.accessLog !== undefined) infra.accessLog = p.accessLog;
  if (p.kubernetes !== undefined) infra.kubernetes = p.kubernetes;
  if (p.logLevel !== undefined) infra.logLevel = p.logLevel;
  if (p.tracing !== undefined) infra.tracing = p.tracing;
  if (inGatewayNamespace) {
    const owner: { gateway: string; uid?: string } = { gateway: first.key };
    if (first.gateway.metadata.uid !== undefined) owner.uid = first.gateway.metadata.uid;
    infra.owner = owner;
  }
  return infra;
}

/**
 * What the fleet's Service is asked for by its (oldest) Gateway's spec.addresses: the first IP address asked for
 * by value of the load balancer and of the cluster (routability Cluster), and whether only Cluster addresses are
 * asked for (then nothing outside the cluster should reach it).
 */
function requestedAddresses(
  requests: readonly {
    type?: string | undefined;
    value?: string | undefined;
    routability?: string | undefined;
  }[],
): Pick<FleetInfra, 'requestedAddress' | 'requestedClusterIP' | 'clusterOnly'> {
  const ips = requests.filter((a) => (a.type ?? 'IPAddress') === 'IPAddress');
  const byValue = ips.filter((a) => a.value !== undefined && a.value !== '');
  const out: Pick<FleetInfra, 'requestedAddress' | 'requestedClusterIP' | 'clusterOnly'> = {};
  const lb = byValue.find((a) => a.routability !== 'Cluster')?.value;
  const cluster = byValue.find((a) => a.routability === 'Cluster')?.value;
  if (lb !== undefined) out.requestedAddress = lb;
  if (cluster !== undefined) out.requestedClusterIP = cluster;
  if (ips.length > 0 && ips.every((a) => a.routability === 'Cluster')) out.clusterOnly = true;
  return out;
}

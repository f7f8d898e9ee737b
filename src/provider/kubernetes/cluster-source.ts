// The Kubernetes provider's resources for the runner: the informers' snapshot, and the data plane as the
// proxies on ready pods report it to any replica, with each fleet's Service addresses.
import { performance } from 'node:perf_hooks';
import { listenerSetOfFleetName } from '../../ir/fleet-config.js';
import type { FleetInfra } from '../../ir/fleet-infra.js';
import { MANAGED_BY, MANAGED_BY_LABEL } from '../../ir/well-known.js';
import type { ResourceSource } from '../../runner/runner.js';
import type { GatewayAddress } from '../../translate/index.js';
import { dataPlaneState } from '../data-plane-state.js';
import type { JsonObject } from './api-client.js';
import type { PeerDataPlane } from './peer-data-plane.js';
import { nodesOnReadyPods } from './ready-proxies.js';
import { withRecordedProgrammed } from './recorded-programmed.js';
import type { ResourceWatch } from './resource-watch.js';

export interface ClusterSourceOptions {
  resources: ResourceWatch;
  /** This replica's proxies. */
  ownNodes: () => ReturnType<PeerDataPlane['nodes']>;
  peers: PeerDataPlane;
  /** The last translation's infrastructure, by fleet. */
  infraOf: (fleet: string) => FleetInfra | undefined;
  /** Until this `performance.now()` time, the stored Programmed verdicts hold (proxies reconnecting). */
  graceEndsAt: () => number;
}

/** A Service's cluster IPs, each routability Cluster (GEP-5093: in the cluster's Service CIDR). */
function clusterIPsOf(spec: JsonObject): GatewayAddress[] {
  const ips = (Array.isArray(spec.clusterIPs) ? spec.clusterIPs : [spec.clusterIP]) as unknown[];
  return ips
    .filter((ip): ip is string => typeof ip === 'string' && ip !== '' && ip !== 'None')
    .map((ip) => ({ type: 'IPAddress', value: ip, routability: 'Cluster' }));
}

/**
 * A fleet's addresses: its load balancer's, then its cluster IPs for the Gateways that ask for a Cluster address;
 * for a ClusterIP or NodePort Service (a DataPlaneProxy's spec.kubernetes.service.type, or a Gateway asking only
 * for Cluster addresses), which gets none from a load balancer, its cluster IPs.
 */
export function addressesOfService(service: JsonObject | undefined): GatewayAddress[] {
  const labels = ((service?.metadata as JsonObject | undefined)?.labels ?? {}) as Record<string, string>;
  if (labels[MANAGED_BY_LABEL] !== MANAGED_BY) return [];
  const spec = (service?.spec ?? {}) as JsonObject;
  if (spec.type === 'ClusterIP' || spec.type === 'NodePort') return clusterIPsOf(spec);
  const ingress = (((service?.status as JsonObject | undefined)?.loadBalancer as JsonObject | undefined)
    ?.ingress ?? []) as { ip?: string; hostname?: string }[];
  const balanced = ingress.flatMap((i): GatewayAddress[] =>
    i.ip !== undefined
      ? [{ type: 'IPAddress', value: i.ip }]
      : i.hostname !== undefined
        ? [{ type: 'Hostname', value: i.hostname }]
        : [],
  );
  return [...balanced, ...clusterIPsOf(spec).map((a): GatewayAddress => ({ ...a, onRequestOnly: true }))];
}

export function clusterSource(options: ClusterSourceOptions): ResourceSource {
  const { resources } = options;
  const fleetService = (fleet: string) => {
    const i = options.infraOf(fleet);
    return i === undefined ? undefined : `${i.namespace}/${i.name}`;
  };
  return {
    snapshot: () => resources.snapshot(),
    dataPlane(fleets, snapshot) {
      // Proxies Ack to whichever replica they are connected to: count the peers' too (polled while leading),
      // and, while they reconnect after a restart or takeover, what the stored status records as Programmed.
      // Only proxies whose pods are ready endpoints count: the Service sends traffic to no other.
      const nodes = nodesOnReadyPods(
        [...options.ownNodes(), ...options.peers.nodes()],
        fleetService,
        snapshot.endpointSlices,
      );
      const live = dataPlaneState(fleets, nodes, (fleet) => {
        const service = fleetService(fleet);
        return service === undefined ? [] : addressesOfService(resources.raw('Service', service));
      });
      return performance.now() < options.graceEndsAt()
        ? withRecordedProgrammed(live, fleets, (name) => {
            const listenerSet = listenerSetOfFleetName(name);
            return listenerSet === undefined
              ? resources.raw('Gateway', name)
              : resources.raw('ListenerSet', listenerSet);
          })
        : live;
    },
  };
}

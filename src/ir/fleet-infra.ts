// The contract between the translator and whoever makes a fleet's infrastructure (the Kubernetes infra applier,
// the host supervisor, certificate issuers): what a fleet needs, what its objects are called and labelled.
import { createHash } from 'node:crypto';
import type { LogLevel } from '../platform/log-line.js';
import type { FleetAccessLog } from './access-log.js';
import type { FleetShape } from './fleet-shape.js';
import type { FleetTracing } from './tracing.js';
import { MANAGED_BY, MANAGED_BY_LABEL, PRIVILEGED_PORT_OFFSET } from './well-known.js';

export type DeployType = 'ControllerNamespace' | 'GatewayNamespace';

export const COMMON_INFRA_LABELS: Readonly<Record<string, string>> = {
  'app.kubernetes.io/name': 'portico-proxy',
  'app.kubernetes.io/component': 'proxy',
  [MANAGED_BY_LABEL]: MANAGED_BY,
};
export const OWNING_GATEWAY_NAMESPACE_LABEL = 'gateway.portico.io/owning-gateway-namespace';
export const OWNING_GATEWAY_NAME_LABEL = 'gateway.portico.io/owning-gateway-name';
export const OWNING_GATEWAYCLASS_LABEL = 'gateway.portico.io/owning-gatewayclass';
/** The Gateway API's own label for infrastructure made for one Gateway. */
export const GATEWAY_NAME_LABEL = 'gateway.networking.k8s.io/gateway-name';

/** Most characters a Kubernetes label value may have. */
export const MAX_LABEL_VALUE = 63;

/**
 * A Gateway or GatewayClass name as a label value. Names may have 253 characters, label values 63: a name that fits
 * is itself; a longer one is its first 54 characters (without a trailing `-`, `.` or `_`, since a value must end
 * alphanumeric), `-` and 8 hex of the whole name's SHA-256, so two long names that share a beginning still differ.
 */
export function labelValue(name: string): string {
  if (name.length <= MAX_LABEL_VALUE) return name;
  const hash = createHash('sha256').update(name).digest('hex').slice(0, 8);
  const body = name.slice(0, MAX_LABEL_VALUE - 9).replace(/[^A-Za-z0-9]+$/, '');
  return `${body}-${hash}`;
}

/** Ports below 1024 bind at port + 10000 inside the pod, so the proxy needs no privilege. */
export function containerPort(port: number): number {
  return port < 1024 ? port + PRIVILEGED_PORT_OFFSET : port;
}

export interface FleetInfraPort {
  name: string;
  port: number;
  /** UDP for a UDP listener's port; TCP for every other. */
  protocol: 'TCP' | 'UDP';
  /** Where the proxy binds inside the pod: ports below 1024 move up by 10000 (no root needed). */
  containerPort: number;
}

/** What a fleet's DataPlaneProxies (its class's, and its Gateway's own over it) say; absent: Portico's defaults. */
export interface FleetParameters {
  /** Worker processes per proxy; absent: the proxy counts its CPUs. */
  workers?: number;
  /** How long a stopping proxy waits for its requests in flight (its --max-drain-seconds); absent: 60. */
  drainSeconds?: number;
  accessLog?: FleetAccessLog;
  /** The workload's shape (spec.kubernetes, checked); absent: one Deployment of one replica, a LoadBalancer. */
  kubernetes?: FleetShape;
  /** The proxies' own log level; absent: info. */
  logLevel?: LogLevel;
  /** Absent: off. */
  tracing?: FleetTracing;
}

export interface FleetInfra extends FleetParameters {
  fleet: string;
  name: string;
  namespace: string;
  labels: Record<string, string>;
  /**
   * Metadata the Gateway's spec.infrastructure asks for, with the standard gateway-name label: on every object
   * and pod, never in selectors (users may change it). Empty for merged fleets, which serve many Gateways.
   */
  propagated: { labels: Record<string, string>; annotations: Record<string, string> };
  /** Gateway Namespace Mode: the Gateway that owns the objects (deleted with it). */
  owner?: { gateway: string; uid?: string };
  gateways: string[];
  ports: FleetInfraPort[];
  /**
   * The IP address the fleet's (oldest) Gateway asks for in spec.addresses: the load balancer is asked for it
   * (the Service's spec.loadBalancerIP). Absent: any address.
   */
  requestedAddress?: string;
  /**
   * The IP address its Gateway asks for with routability Cluster: the Service's cluster IP, given when the Service
   * is made, and only if it is in one of the cluster's Service CIDRs and free. Absent: any.
   */
  requestedClusterIP?: string;
  /** Its Gateway asks only for Cluster addresses: a ClusterIP Service, unless the fleet's shape names a type. */
  clusterOnly?: true;
}

// Names of a fleet's objects (docs/architecture.md, Names): readable, unique by hash, within 63 characters.
/** `default/eg` → `proxy-default-eg-e41e7b31`; `merged-eg` → `proxy-merged-eg-668ac7ae`. */
export function fleetInfraName(key: string): string {
  const hash = createHash('sha256').update(key).digest('hex').slice(0, 8);
  let body = key.replaceAll('/', '-').slice(0, 48);
  if (body.endsWith('-')) body = body.slice(0, -1);
  return `proxy-${body}-${hash}`;
}

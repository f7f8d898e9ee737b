// What the standalone controller shows through its admin API: plain data, produced by the controller on
// request and read by `portico get`. No behaviour here, so the admin server can be tested on its own.
import type { ResourceError } from '../../api/common.js';
import type { FleetConfig } from '../../ir/fleet-config.js';

/** On an object whose file is broken now: its errors, one per line (the object keeps its last good content). */
export const LOAD_ERRORS_ANNOTATION = 'gateway.portico.io/load-errors';

export interface AdminState {
  /** False until the first translation has finished: `/readyz` answers 503 until then. */
  ready: boolean;
  /** GatewayClasses, Gateways, HTTPRoutes (and any other kind) as full objects with their status. */
  resources: readonly ResourceObject[];
  fleets: readonly FleetState[];
  /** What is wrong with the resource files now (gone once the file is fixed or removed). */
  errors: readonly ResourceError[];
}

export interface ResourceObject {
  apiVersion: string;
  kind: string;
  metadata: ResourceMetadata;
  spec?: unknown;
  status?: unknown;
}

export interface ResourceMetadata {
  name: string;
  /** Absent for cluster-scoped kinds (GatewayClass). */
  namespace?: string;
  /** RFC 3339; standalone sets it when it first sees the object (or keeps the file's value). */
  creationTimestamp?: string;
  generation?: number;
  uid?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface FleetState {
  /** The fleet key: `<namespace>/<gateway>`, or the GatewayClass name when merged. */
  fleet: string;
  /** The loopback address the fleet's proxy binds. */
  address?: string;
  /** The version of the config the discovery server currently serves this fleet. */
  version?: string;
  /** Absent until translated. Secrets are redacted by the admin server, never by the producer. */
  config?: FleetConfig;
  /** Proxies connected to discovery for this fleet and what each has applied. */
  nodes: readonly FleetNodeState[];
  /** The supervised proxy process, when the controller runs one. */
  process?: FleetProcessState;
}

export interface FleetNodeState {
  node: string;
  /** The last version the node acknowledged (ACK). */
  appliedVersion?: string;
  /** The last version the node rejected (NACK) and why. */
  rejectedVersion?: string;
  error?: string;
  connectedAt?: string;
}

export interface FleetProcessState {
  pid?: number;
  state: 'starting' | 'running' | 'backoff' | 'stopping';
  /** Started by an earlier controller run and adopted by this one. */
  adopted?: boolean;
  restarts: number;
  lastExit?: { code: number | null; signal: string | null; at: string };
  /** Whether it answers its liveness probe (`unknown` until the first answer), and why not. */
  health?: 'unknown' | 'live' | 'failing';
  healthError?: string;
}

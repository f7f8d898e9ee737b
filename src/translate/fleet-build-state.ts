// What a fleet build keeps between builds: per VirtualHost, per attached route and per port, the bookkeeping that
// lets the next build (fleet-update.ts) redo only what changed. Types alone, below both builds and the cache.
import type { RouteObject } from '../api/route-kinds.js';
import type { FleetConfig, Listener, VirtualHost } from '../ir/fleet-config.js';
import type { FleetConfigChange } from '../ir/fleet-config-patch.js';
import type { ResolvedCluster } from './backends.js';
import type { RouteState } from './routes.js';

/** One VirtualHost being built: its owner (index into the fleet's ready listeners) and the routes it serves. */
export interface HostState {
  hostname: string;
  name: string;
  /** The fleet Listener it serves on (`port-<port>`). */
  listener: string;
  owner: number;
  contributors: Map<RouteObject, RouteState>;
  vhost?: VirtualHost;
}

/** What one attached route contributed through one listener, to undo it when the route changes. */
export interface RouteEntry {
  /** Index of the listener (among the fleet's ready listeners) it is attached through. */
  listener: number;
  rs: RouteState;
  hostnames: string[];
  targets: HostState[];
  /** Distinct cluster names of its backends; counted in `clusterRefs` only when it has targets. */
  clusters: string[];
}

export interface PortState {
  port: number;
  /** Indexes of the fleet's ready listeners on this port, in listener order. */
  listeners: number[];
  listenerHostnames: Set<string>;
  hosts: Map<string, HostState>;
  /** Hostname → how many (listener, route) pairs have it as an effective hostname. */
  hostRefs: Map<string, number>;
  /** Entries with a wildcard or `*` effective hostname: they also serve VirtualHosts created later. */
  wildcards: RouteEntry[];
  listener: Listener;
}

/** A fleet's last build: its output and how it was derived, so the next build can redo only what changed. */
export interface FleetBuildState {
  /** Identity of everything but the attached routes (key, Gateways, listeners, their secrets). */
  frame: unknown[];
  /** Per ready listener (by index): its attached routes' contributions. */
  entries: Map<RouteObject, RouteEntry>[];
  ports: Map<number, PortState>;
  clusterRefs: Map<string, number>;
  /** The cluster objects the config's clusters and endpoints came from, by name. */
  clusterObjects: Map<string, ResolvedCluster>;
  config: FleetConfig;
  /** How `config` came from the one before, when an update made it (a full build does not say). */
  change?: FleetConfigChange;
}

// A host proxy's own admin, metrics and readiness ports live on its fleet's address, so a Gateway listener on
// one of them could never bind. Such listeners are left out of the fleet config and reported as a listener
// condition that says why, instead of surfacing as an unexplained "address in use" from the proxy.
import type { FleetConfig } from '../../ir/fleet-config.js';
import { HOST_PROXY_PORTS } from './proxy-args.js';

export interface ReservedPortError {
  /** `<namespace>/<gateway name>` */
  gateway: string;
  listener: string;
  message: string;
}

const PURPOSE = new Map<number, string>(
  Object.entries(HOST_PROXY_PORTS).map(([purpose, port]) => [port, purpose]),
);

/** The fleet without listeners on reserved ports (the same object when there are none), and why each went. */
export function withoutReservedPorts(fleet: FleetConfig): {
  fleet: FleetConfig;
  errors: ReservedPortError[];
} {
  const reserved = fleet.listeners.filter((l) => PURPOSE.has(l.port));
  if (reserved.length === 0) return { fleet, errors: [] };
  const errors = reserved.flatMap((l) =>
    l.gatewayListeners.map((ref) => ({
      gateway: ref.gateway,
      listener: ref.listener,
      message:
        `port ${l.port} is reserved for the proxy's ${PURPOSE.get(l.port)} endpoint on the fleet's address ` +
        `in standalone mode (reserved: ${[...PURPOSE.keys()].join(', ')}); use another port`,
    })),
  );
  return { fleet: { ...fleet, listeners: fleet.listeners.filter((l) => !PURPOSE.has(l.port)) }, errors };
}

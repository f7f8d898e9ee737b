// Standalone proxies serve their own admin, metrics and readiness ports on the fleet's address: listeners on
// those ports are kept out of what discovery serves, and remembered as the fleet's listener errors.
import type { DiscoveryServer } from '../../discovery/server.js';
import { type ReservedPortError, withoutReservedPorts } from '../../infra/host/reserved-ports.js';
import type { FleetPublisher } from '../../runner/publish.js';

export interface ReservedPortPublisher extends FleetPublisher {
  /** Listeners kept off the reserved ports, by fleet. */
  errors(): ReadonlyMap<string, readonly ReservedPortError[]>;
  /** Whether the errors changed since the last call: the translation that published did not know them. */
  takeChanged(): boolean;
}

export function reservedPortPublisher(discovery: DiscoveryServer): ReservedPortPublisher {
  const errors = new Map<string, ReservedPortError[]>();
  let changed = false;
  return {
    setFleet(config) {
      const served = withoutReservedPorts(config);
      const before = errors.get(config.fleet);
      if (JSON.stringify(before ?? []) !== JSON.stringify(served.errors)) changed = true;
      if (served.errors.length > 0) errors.set(config.fleet, served.errors);
      else errors.delete(config.fleet);
      discovery.setFleet(served.fleet);
    },
    removeFleet(fleet) {
      if (errors.delete(fleet)) changed = true;
      discovery.removeFleet(fleet);
    },
    nodes: () => discovery.nodes(),
    errors: () => errors,
    takeChanged() {
      const was = changed;
      changed = false;
      return was;
    },
  };
}

// Hands fleet configs to config discovery: only the fleets whose config changed, and the removal of the
// fleets no longer translated. The translator keeps an unchanged fleet's config object, so identity decides.
import type { FleetConfig } from '../ir/fleet-config.js';
import type { FleetConfigChange } from '../ir/fleet-config-patch.js';
import type { RunnerMetrics } from './metrics.js';

/** Where fleet configs go (the discovery server, or a provider's wrapper around it). */
export interface FleetPublisher {
  /** `change`: how `config` differs from the fleet's config published before, when the translation knows. */
  setFleet(config: FleetConfig, change?: FleetConfigChange): void;
  removeFleet(fleet: string): void;
  /** The proxies connected now. */
  nodes(): readonly unknown[];
}

export interface PublishedFleets {
  /** Sends what changed since the last call (`changes`: per fleet, which of its resources, when known). */
  publish(fleets: readonly FleetConfig[], changes?: ReadonlyMap<string, FleetConfigChange>): void;
  /** The fleets as last published. */
  current(): readonly FleetConfig[];
}

export function createPublishedFleets(publisher: FleetPublisher, metrics: RunnerMetrics): PublishedFleets {
  const served = new Map<string, FleetConfig>();
  let fleets: readonly FleetConfig[] = [];
  return {
    publish(next, changes) {
      const gone = new Set(served.keys());
      for (const fleet of next) {
        gone.delete(fleet.fleet);
        if (served.get(fleet.fleet) === fleet) continue;
        publisher.setFleet(fleet, changes?.get(fleet.fleet));
        served.set(fleet.fleet, fleet);
        metrics.configVersions.set(fleet.fleet, (metrics.configVersions.get(fleet.fleet) ?? 0) + 1);
      }
      for (const fleet of gone) {
        publisher.removeFleet(fleet);
        served.delete(fleet);
        metrics.configVersions.delete(fleet);
      }
      fleets = next;
      metrics.connectedProxies = publisher.nodes().length;
    },
    current: () => fleets,
  };
}

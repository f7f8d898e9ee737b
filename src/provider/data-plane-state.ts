// What the proxies report (discovery ACKs, listener errors) plus each fleet's addresses, as the translator's
// DataPlaneState: shared by the standalone and Kubernetes controllers.
import type { NodeState } from '../discovery/server.js';
import type { FleetConfig } from '../ir/fleet-config.js';
import type { DataPlaneState, GatewayAddress } from '../translate/index.js';

export function dataPlaneState(
  fleets: readonly FleetConfig[],
  nodes: readonly NodeState[],
  addressesOf: (fleet: string) => GatewayAddress[],
): DataPlaneState {
  const state: DataPlaneState = { fleets: {} };
  for (const fleet of fleets) {
    const appliedGateways: Record<string, number> = {};
    const listenerErrors: DataPlaneState['fleets'][string]['listenerErrors'] = [];
    for (const node of nodes) {
      if (node.fleet !== fleet.fleet || node.appliedVersion === undefined) continue;
      for (const [gateway, generation] of Object.entries(node.appliedGateways)) {
        appliedGateways[gateway] = Math.max(appliedGateways[gateway] ?? 0, generation);
      }
      for (const error of node.listenerErrors) {
        const listener = fleet.listeners.find((l) => l.name === error.listener);
        for (const ref of listener?.gatewayListeners ?? []) {
          listenerErrors.push({ gateway: ref.gateway, listener: ref.listener, message: error.message });
        }
      }
    }
    state.fleets[fleet.fleet] = { addresses: addressesOf(fleet.fleet), appliedGateways, listenerErrors };
  }
  return state;
}

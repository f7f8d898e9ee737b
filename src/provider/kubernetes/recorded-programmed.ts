// A Gateway whose stored status says Programmed=True at its current generation was applied by a proxy: for a
// while after starting or taking the lease, the controller counts that, so Programmed does not flap to False while
// the proxies (which keep serving that config) reconnect.
import type { FleetConfig } from '../../ir/fleet-config.js';
import type { DataPlaneState } from '../../translate/index.js';
import type { JsonObject } from './api-client.js';

/** The generation a stored Gateway status records as Programmed, if it is the object's current one. */
export function recordedProgrammedGeneration(gateway: JsonObject | undefined): number | undefined {
  const generation = (gateway?.metadata as JsonObject | undefined)?.generation;
  const conditions = (gateway?.status as JsonObject | undefined)?.conditions;
  if (typeof generation !== 'number' || !Array.isArray(conditions)) return undefined;
  const programmed = conditions.find(
    (c): c is JsonObject => typeof c === 'object' && c !== null && (c as JsonObject).type === 'Programmed',
  );
  return programmed?.status === 'True' && programmed.observedGeneration === generation
    ? generation
    : undefined;
}

/**
 * `state` with each fleet's Gateways' (and ListenerSets') recorded Programmed generations counted as applied.
 * `gatewayObject` is given each name of a fleet's `gateways`: `ns/name`, or `ListenerSet ns/name`.
 */
export function withRecordedProgrammed(
  state: DataPlaneState,
  fleets: readonly FleetConfig[],
  gatewayObject: (name: string) => JsonObject | undefined,
): DataPlaneState {
  const out: DataPlaneState = { fleets: { ...state.fleets } };
  for (const fleet of fleets) {
    const current = out.fleets[fleet.fleet];
    if (current === undefined) continue;
    let applied = current.appliedGateways;
    for (const gw of fleet.gateways) {
      const recorded = recordedProgrammedGeneration(gatewayObject(gw.name));
      if (recorded === undefined || (applied[gw.name] ?? 0) >= recorded) continue;
      if (applied === current.appliedGateways) applied = { ...applied };
      applied[gw.name] = recorded;
    }
    if (applied !== current.appliedGateways)
      out.fleets[fleet.fleet] = { ...current, appliedGateways: applied };
  }
  return out;
}

// The check the discovery server makes of a fleet config it is handed: translator output, so a malformed one is
// a bug, reported with the field.

import { FLEET_RESOURCE_TYPES, type FleetConfig } from '../ir/fleet-config.js';
import { PorticoError } from '../platform/errors.js';

export function checkFleetShape(config: FleetConfig): void {
  if (typeof config.fleet !== 'string' || config.fleet === '') {
    throw new PorticoError('E_FLEET_CONFIG', 'setFleet: fleet config has no fleet key');
  }
  for (const type of FLEET_RESOURCE_TYPES) {
    const list: unknown = config[type];
    if (!Array.isArray(list))
      throw new PorticoError('E_FLEET_CONFIG', `setFleet: fleet '${config.fleet}': ${type} is not a list`);
    if (!namesSorted(config.fleet, type, list)) checkNamesUnique(config.fleet, type, list);
  }
}

/** Names in strictly increasing order (the contract's sort) are unique without a Set of them all. */
function namesSorted(fleet: string, type: string, list: unknown[]): boolean {
  let sorted = true;
  let previous = '';
  for (const [i, item] of list.entries()) {
    const name = (item as { name?: unknown } | null)?.name;
    if (typeof name !== 'string' || name === '') {
      throw new PorticoError('E_FLEET_CONFIG', `setFleet: fleet '${fleet}': ${type}[${i}].name is missing`);
    }
    if (i > 0 && !(previous < name)) sorted = false;
    previous = name;
  }
  return sorted;
}

function checkNamesUnique(fleet: string, type: string, list: unknown[]): void {
  const seen = new Set<string>();
  for (const [i, item] of list.entries()) {
    const name = (item as { name: string }).name;
    if (seen.has(name)) {
      throw new PorticoError(
        'E_FLEET_CONFIG',
        `setFleet: fleet '${fleet}': ${type}[${i}].name '${name}' is not unique`,
      );
    }
    seen.add(name);
  }
}

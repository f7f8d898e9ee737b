// A fleet's infrastructure name is a 48-character prefix and 32 bits of hash: two fleet keys can be made to
// share one on purpose. They must never share a Deployment and a client certificate: the fleet with the oldest
// Gateway keeps the name, and each other claimant is left without infrastructure and told which fleet has it.
import type { Gateway } from '../api/gateway.js';
import type { FleetInfra } from '../ir/fleet-infra.js';

export interface InfraClaim {
  infra: FleetInfra;
  /** The fleet's oldest Gateway: the oldest claim wins, as with listener conflicts. */
  oldest: Gateway;
}

/** Fleet key → why it gets no infrastructure, for every claim of a name an older claim already holds. */
export function contestedInfraNames(
  claims: readonly InfraClaim[],
  byAge: (a: Gateway, b: Gateway) => number,
): Map<string, string> {
  const losers = new Map<string, string>();
  const holders = new Map<string, InfraClaim>();
  for (const claim of [...claims].sort((a, b) => byAge(a.oldest, b.oldest))) {
    const name = `${claim.infra.namespace}/${claim.infra.name}`;
    const holder = holders.get(name);
    if (holder === undefined) {
      holders.set(name, claim);
      continue;
    }
    const holderGateway = `${holder.oldest.metadata.namespace ?? 'default'}/${holder.oldest.metadata.name}`;
    losers.set(
      claim.infra.fleet,
      `The infrastructure name ${name} of fleet ${claim.infra.fleet} is already used by fleet ${holder.infra.fleet} (Gateway ${holderGateway}); no proxies are made for this Gateway until one of them is renamed`,
    );
  }
  return losers;
}

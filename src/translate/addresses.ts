// Which of its fleet's addresses a Gateway gets for each entry of spec.addresses, with the routability each is
// reported with (Gateway API v1.7 experimental, GEP-5093). Every entry is weighed on its own; an address serves
// one entry at most; an entry that cannot be met is left unmet and said, never met with another kind of address.
import type { GatewayAddress } from './types.js';

/** Reserved for the conformance suite: no reachability promise, reported back as asked. */
export const SENTINEL_ROUTABILITY = 'testing.x-k8s.io/sentinel';

export interface AddressRequest {
  type?: string | undefined;
  value?: string | undefined;
  routability?: string | undefined;
}

export interface AssignedAddress {
  type: 'IPAddress' | 'Hostname';
  value: string;
  routability: string;
}

export interface AddressAssignment {
  /** What status.addresses lists: one address per met entry, or the fleet's own when the Gateway asks none. */
  addresses: AssignedAddress[];
  /**
   * The entries left unmet, by index in spec.addresses, each with why; `byValue`: one asking the load balancer
   * (or the standalone address pool) for a value, which GatewayStaticAddresses says makes it AddressNotUsable.
   */
  unmet: { index: number; byValue: boolean; why: string }[];
}

/** What an address of the fleet is reported as when the Gateway asks nothing of its reachability. */
function ownRoutability(a: GatewayAddress): string {
  return a.routability ?? '';
}

/** Why `request` cannot be met at all, whatever the fleet has; undefined when it can be. */
function unsupported(request: AddressRequest): string | undefined {
  const type = request.type ?? 'IPAddress';
  if (type !== 'IPAddress') return `type ${type} is not supported (IPAddress is)`;
  const r = request.routability ?? '';
  if (r !== '' && r !== 'Cluster' && r !== SENTINEL_ROUTABILITY)
    return `routability ${r} is not supported (Portico gives the default, Cluster and ${SENTINEL_ROUTABILITY})`;
  return undefined;
}

function matches(request: AddressRequest, a: GatewayAddress): boolean {
  if (request.value !== undefined && request.value !== '' && a.value !== request.value) return false;
  if (request.routability === 'Cluster') return a.routability === 'Cluster';
  // A request for any address gets one of those the fleet gives by default (not a load balancer's cluster IP).
  return (request.value !== undefined && request.value !== '') || a.onRequestOnly !== true;
}

function describe(a: readonly GatewayAddress[]): string {
  if (a.length === 0) return 'it has no address yet';
  return `it has ${a.map((x) => (x.routability === 'Cluster' ? `${x.value} (Cluster)` : x.value)).join(', ')}`;
}

/** Entries asking for a value go first, then those asking for a scope, so the loosest take what is left. */
function rank(r: AddressRequest): number {
  if (r.value !== undefined && r.value !== '') return 0;
  return r.routability === 'Cluster' ? 1 : 2;
}

export function assignAddresses(
  requests: readonly AddressRequest[],
  fleet: readonly GatewayAddress[],
): AddressAssignment {
  if (requests.length === 0) {
    const addresses = fleet
      .filter((a) => a.onRequestOnly !== true)
      .map((a) => ({ type: a.type, value: a.value, routability: ownRoutability(a) }));
    return { addresses, unmet: [] };
  }
  const order = requests.map((r, index) => ({ r, index })).sort((a, b) => rank(a.r) - rank(b.r));
  const used = new Set<GatewayAddress>();
  const met: { index: number; address: AssignedAddress }[] = [];
  const unmet: AddressAssignment['unmet'] = [];
  for (const { r, index } of order) {
    const byValue = r.value !== undefined && r.value !== '' && r.routability !== 'Cluster';
    const why = unsupported(r);
    if (why !== undefined) {
      unmet.push({ index, byValue, why });
      continue;
    }
    const a = fleet.find((x) => !used.has(x) && matches(r, x));
    if (a === undefined) {
      const valued = r.value !== undefined && r.value !== '';
      const wanted = `${valued ? r.value : 'an address'}${r.routability === 'Cluster' ? ' (Cluster)' : ''}`;
      const hint =
        valued && r.routability === 'Cluster'
          ? " (a Cluster address asked for by value is given only as the fleet's Service is made, if it is free and in the cluster's Service CIDRs)"
          : '';
      unmet.push({ index, byValue, why: `no address of the fleet is ${wanted}: ${describe(fleet)}${hint}` });
      continue;
    }
    used.add(a);
    const routability =
      r.routability === 'Cluster' || r.routability === SENTINEL_ROUTABILITY
        ? r.routability
        : ownRoutability(a);
    met.push({ index, address: { type: a.type, value: a.value, routability } });
  }
  met.sort((a, b) => a.index - b.index);
  unmet.sort((a, b) => a.index - b.index);
  return { addresses: met.map((m) => m.address), unmet };
}

// Connection pools, one per upstream endpoint and protocol (our own HTTP/1.1 client: it measured cheaper per
// request than undici and node:http's Agent, see bench/upstream-http1.ts; h2c sessions in h2c-pool.ts),
// made on first use and closed once no cluster uses the endpoint.
import type { Endpoint } from '../../ir/fleet-config.js';
import { endpointKey } from '../routing/snapshot.js';

/** What a registry needs of one endpoint's pool. */
export interface EndpointPoolLike {
  /** Takes no new request; those in flight finish. */
  close(): void;
  /** Cuts everything at once. */
  destroy(): void;
}

export interface UpstreamPools<P extends EndpointPoolLike> {
  get(endpoint: Endpoint): P;
  /** Closes (gracefully: requests in flight finish) pools of endpoints not in `keep`. */
  retain(keep: Iterable<Endpoint>): void;
  destroy(): void;
}

export function createUpstreamPools<P extends EndpointPoolLike>(
  make: (address: string, port: number, key: string) => P,
): UpstreamPools<P> {
  const pools = new Map<string, P>();
  // Endpoint objects live as long as their config: a lookup by identity skips building the key per request.
  let byObject = new WeakMap<Endpoint, P>();
  return {
    get(endpoint) {
      let pool = byObject.get(endpoint);
      if (pool !== undefined) return pool;
      const key = endpointKey(endpoint);
      pool = pools.get(key);
      if (pool === undefined) {
        pool = make(endpoint.address, endpoint.port, key);
        pools.set(key, pool);
      }
      byObject.set(endpoint, pool);
      return pool;
    },
    retain(keep) {
      const wanted = new Set([...keep].map(endpointKey));
      for (const [key, pool] of pools) {
        if (wanted.has(key)) continue;
        pools.delete(key);
        pool.close();
      }
      byObject = new WeakMap();
    },
    destroy() {
      const all = [...pools.values()];
      pools.clear();
      byObject = new WeakMap();
      for (const p of all) p.destroy();
    },
  };
}

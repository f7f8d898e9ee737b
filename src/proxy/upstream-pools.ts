// Keep-alive connection pools, one per upstream endpoint (our own HTTP/1.1 client: it measured cheaper per
// request than undici and node:http's Agent, see bench/upstream-client.ts), capped per endpoint and closed
// once no cluster uses the endpoint.
import type { Endpoint } from '../ir/fleet-config.js';
import { endpointKey } from './snapshot.js';
import { EndpointPool, type UpstreamPoolOptions } from './upstream-client.js';

export interface UpstreamPools {
  get(endpoint: Endpoint): EndpointPool;
  /** Closes (gracefully: requests in flight finish) pools of endpoints not in `keep`. */
  retain(keep: Iterable<Endpoint>): void;
  destroy(): Promise<void>;
}

export function createUpstreamPools(options: UpstreamPoolOptions): UpstreamPools {
  const pools = new Map<string, EndpointPool>();
  // Endpoint objects live as long as their config: a lookup by identity skips building the key per request.
  let byObject = new WeakMap<Endpoint, EndpointPool>();
  return {
    get(endpoint) {
      let pool = byObject.get(endpoint);
      if (pool !== undefined) return pool;
      const key = endpointKey(endpoint);
      pool = pools.get(key);
      if (pool === undefined) {
        pool = new EndpointPool(endpoint.address, endpoint.port, key, options);
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
    async destroy() {
      const all = [...pools.values()];
      pools.clear();
      byObject = new WeakMap();
      for (const p of all) p.destroy();
    },
  };
}

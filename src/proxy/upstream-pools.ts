// Keep-alive connection pools, one per upstream endpoint (undici: it measured faster than node:http's Agent
// here, see bench/proxy.ts), capped per endpoint and closed once no cluster uses the endpoint.
import { Pool } from 'undici';
import type { Endpoint } from '../ir/fleet-config.js';
import { endpointKey } from './snapshot.js';

export interface UpstreamPools {
  get(endpoint: Endpoint): Pool;
  /** Closes (gracefully: requests in flight finish) pools of endpoints not in `keep`. */
  retain(keep: Iterable<Endpoint>): void;
  destroy(): Promise<void>;
}

export function createUpstreamPools(options: {
  connectionsPerEndpoint: number;
  idleTimeoutMs: number;
}): UpstreamPools {
  const pools = new Map<string, Pool>();
  return {
    get(endpoint) {
      const key = endpointKey(endpoint);
      let pool = pools.get(key);
      if (pool === undefined) {
        pool = new Pool(`http://${key}`, {
          connections: options.connectionsPerEndpoint,
          keepAliveTimeout: options.idleTimeoutMs,
          keepAliveMaxTimeout: options.idleTimeoutMs,
          pipelining: 1,
          // Route and backend timeouts are the proxy's own (504); these only bound a stuck connection.
          headersTimeout: 0,
          bodyTimeout: 0,
        });
        pools.set(key, pool);
      }
      return pool;
    },
    retain(keep) {
      const wanted = new Set([...keep].map(endpointKey));
      for (const [key, pool] of pools) {
        if (wanted.has(key)) continue;
        pools.delete(key);
        pool.close().catch(() => undefined);
      }
    },
    async destroy() {
      const all = [...pools.values()];
      pools.clear();
      await Promise.all(all.map((p) => p.destroy().catch(() => undefined)));
    },
  };
}

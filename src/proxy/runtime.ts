// The state shared by every listener of one proxy: the current snapshot, the upstream pool, counters.
import type { Duplex } from 'node:stream';
import type { Authorizers } from './access/step.js';
import type { ProxyOptions } from './options.js';
import type { RateLimits } from './rate-limits.js';
import type { Snapshot } from './routing/snapshot.js';
import type { AccessLog } from './telemetry/access-log.js';
import type { ProxyMetrics } from './telemetry/metrics.js';
import type { Tracing } from './telemetry/tracing.js';
import type { TlsUpstreamPools } from './upstream/backend-tls.js';
import type { Upstreams } from './upstream/by-protocol.js';
import type { H2EndpointPool } from './upstream/h2c-pool.js';
import type { EndpointPool } from './upstream/http1.js';
import type { UpstreamPools } from './upstream/pools.js';

export interface ProxyRuntime {
  options: ProxyOptions;
  metrics: ProxyMetrics;
  /** Keep-alive connection pools per upstream endpoint. */
  pools: UpstreamPools<EndpointPool>;
  /** Multiplexed HTTP/2 (h2c) sessions per upstream endpoint, for clusters of protocol `h2c`. */
  h2Pools: UpstreamPools<H2EndpointPool>;
  /** The same, per BackendTLSPolicy settings, for clusters that speak TLS to their backends. */
  tlsPools: TlsUpstreamPools<EndpointPool>;
  h2TlsPools: TlsUpstreamPools<H2EndpointPool>;
  /** The pools above behind one interface, by cluster protocol: what the handler sends through. */
  upstreams: Upstreams;
  /** Swapped atomically by apply; a request reads it once, at its start. */
  snapshot: Snapshot | undefined;
  draining: boolean;
  /** Requests in flight per endpoint key, for least-request balancing. */
  activeByEndpoint: Map<string, number>;
  /** RequestMirror copies in flight (bounded by limits.maxMirrorsInFlight). */
  mirrorsInFlight: number;
  /** Upgraded client connections: the HTTP server no longer tracks them, so close() must. */
  tunnels: Set<Duplex>;
  /** Rate-limit decisions and their stores (Redis clients of Global rules). */
  rateLimits: RateLimits;
  /** One line per finished request; undefined: off. */
  accessLog: AccessLog | undefined;
  /** Trace context and spans; undefined: off (a client's traceparent passes on untouched). */
  tracing: Tracing | undefined;
  /** Clients of the authorization services routes' ExternalAuth filters name. */
  authorizers: Authorizers;
}

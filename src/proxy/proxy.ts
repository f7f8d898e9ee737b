// The proxy runtime: applies fleet configs (validate, compile, bind, swap), drains, and reports.
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FleetConfig, Listener, TlsSecret, VirtualHost } from '../ir/fleet-config.js';
import { type RejectedResource, validateFleetResources } from '../ir/validate.js';
import { isPorticoError } from '../platform/errors.js';
import { AccessLog } from './access-log.js';
import { type SideServer, sideServerAddress, startSideServers } from './admin.js';
import { H2EndpointPool } from './h2/upstream-pools.js';
import { type BoundListener, bindListener, closeListener, updateCertificates } from './listeners.js';
import { createProxyMetrics, type LiveNames } from './metrics.js';
import { bindPort, type ProxyOptionsInput, resolveProxyOptions } from './options.js';
import type { CompiledVirtualHost } from './routing.js';
import type { ProxyRuntime } from './runtime.js';
import { compileSnapshot } from './snapshot.js';
import { type CertificateTable, compileCertificates, createSecureContextCache } from './tls.js';
import { EndpointPool } from './upstream-client.js';
import { createUpstreamPools } from './upstream-pools.js';
import type { WorkerStats } from './workers/protocol.js';

export type ApplyOutcome =
  | {
      ok: true;
      listenerErrors: { listener: string; message: string }[];
      /** Resources refused alone: their last good version serves (present only when some were). */
      rejected?: RejectedResource[];
    }
  | { ok: false; error: string };

export interface Proxy {
  /**
   * Validates, binds new listeners, swaps atomically. A resource that fails validation is rejected alone (its last
   * good version keeps serving, see validateFleetResources); a config that is not one leaves the previous serving.
   * Applied configs are treated as immutable: VirtualHost objects passed again unchanged (same object) are
   * not recompiled, so pass new objects for changed resources rather than editing old ones in place.
   */
  apply(config: unknown, version?: string): Promise<ApplyOutcome>;
  /** A config is applied and the proxy is not draining. */
  readonly ready: boolean;
  /** Resolves once the admin, metrics and readiness servers listen (rejects if one cannot bind). */
  readonly started: Promise<void>;
  /** Graceful: fail readiness, keep serving drainMs, stop accepting, wait for requests in flight up to maxMs. */
  drain(options?: { drainMs?: number; maxMs?: number }): Promise<void>;
  /** Immediate: closes every socket. */
  close(): Promise<void>;
  /** Bound sockets: listeners by their name, side servers as `admin`, `metrics`, `ready`. */
  addresses(): { listener: string; port: number; address: string }[];
}

/** A proxy serving in this process (alone, or as one worker of several). */
export interface InProcessProxy extends Proxy {
  /** Requests being answered now. */
  inFlight(): number;
  /** Counts and liveness as plain data (what a worker reports to its primary). */
  stats(): WorkerStats;
}

function versionOf(config: FleetConfig): string {
  return createHash('sha256').update(JSON.stringify(config)).digest('hex').slice(0, 16);
}

/** The names metrics keep series for: a deleted route's, listener's or cluster's series go. */
function liveNames(config: FleetConfig): LiveNames {
  const routes = new Set<string>();
  for (const v of config.virtualHosts) for (const r of v.routes) routes.add(r.name);
  return {
    listeners: new Set(config.listeners.map((l) => l.name)),
    routes,
    clusters: new Set(config.clusters.map((c) => c.name)),
  };
}

function message(error: unknown): string {
  return isPorticoError(error) || error instanceof Error ? error.message : String(error);
}

export function createProxy(input: ProxyOptionsInput = {}): InProcessProxy {
  const options = resolveProxyOptions(input);
  const h1Pool = {
    maxConnections: options.upstreamConnectionsPerEndpoint,
    idleTimeoutMs: options.upstreamIdleTimeoutMs,
    connectTimeoutMs: options.upstreamConnectTimeoutMs,
  };
  const h2Pool = {
    limits: options.http2,
    idleTimeoutMs: options.upstreamIdleTimeoutMs,
    connectTimeoutMs: options.upstreamConnectTimeoutMs,
  };
  const rt: ProxyRuntime = {
    options,
    metrics: createProxyMetrics(),
    pools: createUpstreamPools((address, port, key) => new EndpointPool(address, port, key, h1Pool)),
    h2Pools: createUpstreamPools((address, port, key) => new H2EndpointPool(address, port, key, h2Pool)),
    snapshot: undefined,
    draining: false,
    activeByEndpoint: new Map(),
    tunnels: new Set(),
    accessLog: options.accessLog === undefined ? undefined : new AccessLog(options.accessLog),
  };
  const bound = new Map<string, BoundListener>();
  const contexts = createSecureContextCache();
  const compiledVirtualHosts = new WeakMap<VirtualHost, CompiledVirtualHost>();
  let appliedAt = '';
  let applying: Promise<unknown> = Promise.resolve();
  let drainPromise: Promise<void> | undefined;
  let drained = false;
  let sideServers: SideServer[] = [];
  let started: Promise<void> = Promise.resolve();

  const proxy: InProcessProxy = {
    get ready() {
      return rt.snapshot !== undefined && !rt.draining;
    },
    get started() {
      return started;
    },
    apply(config, version) {
      // One apply at a time: binding is asynchronous and must not interleave.
      const next = applying.then(() => applyNow(config, version));
      applying = next.catch(() => undefined);
      return next;
    },
    drain(drainOptions = {}) {
      drainPromise ??= drainNow(
        drainOptions.drainMs ?? options.drainMs,
        drainOptions.maxMs ?? options.maxDrainMs,
      );
      return drainPromise;
    },
    async close() {
      rt.draining = true;
      const closing = [...bound.values(), ...sideServers].map(
        (b) =>
          new Promise<void>((resolve) => {
            b.server.close(() => resolve());
            b.server.closeAllConnections();
          }),
      );
      for (const tunnel of rt.tunnels) tunnel.destroy();
      bound.clear();
      sideServers = [];
      rt.pools.destroy();
      rt.h2Pools.destroy();
      await Promise.all(closing);
      // The last requests' lines are out before close() resolves (a process exits next).
      rt.accessLog?.flush();
    },
    addresses() {
      return [
        ...[...bound.values()].map((b) => ({ listener: b.context.name, port: b.port, address: b.address })),
        ...sideServers.map((s) => ({ listener: s.name, ...sideServerAddress(s) })),
      ];
    },
    inFlight: () => rt.metrics.inFlight,
    stats: () => ({ metrics: rt.metrics.snapshot(), notLive: view.notLive() }),
  };

  async function applyNow(value: unknown, version: string | undefined): Promise<ApplyOutcome> {
    if (rt.draining) return { ok: false, error: 'proxy is draining' };
    let config: FleetConfig;
    let rejected: RejectedResource[];
    let snapshot: ReturnType<typeof compileSnapshot>;
    try {
      ({ config, rejected } = validateFleetResources(value, rt.snapshot?.config));
      options.trace?.('proxy-validated', version);
      snapshot = compileSnapshot(config, version ?? versionOf(config), compiledVirtualHosts);
      options.trace?.('proxy-compiled', version);
    } catch (error) {
      return { ok: false, error: message(error) };
    }
    const listenerErrors: { listener: string; message: string }[] = [];
    const secrets = new Map<string, TlsSecret>(config.secrets.map((s) => [s.name, s]));
    const certificates = new Map<string, CertificateTable>();
    const usable: Listener[] = [];
    for (const listener of config.listeners) {
      try {
        if (listener.tls !== undefined)
          certificates.set(listener.name, compileCertificates(listener.tls, secrets, contexts));
        usable.push(listener);
      } catch (error) {
        listenerErrors.push({ listener: listener.name, message: message(error) });
      }
    }
    // Swap first: from here every new request, on any socket, routes by the new config.
    rt.snapshot = snapshot;
    options.trace?.('proxy-swapped', version);
    appliedAt = new Date().toISOString();
    for (const [name, b] of bound) {
      const next = usable.find((l) => l.name === name);
      if (next === undefined && config.listeners.some((l) => l.name === name)) continue; // bad TLS: keep old
      if (next === undefined || next.protocol !== b.protocol) {
        bound.delete(name);
        void closeListener(b, options.maxDrainMs);
      }
    }
    if (bound.size > 0) await sleep(0); // let closed listening sockets release their ports
    for (const listener of usable) {
      const existing = bound.get(listener.name);
      const table = certificates.get(listener.name);
      if (existing !== undefined) {
        if (table !== undefined) updateCertificates(existing, table);
        continue;
      }
      try {
        bound.set(listener.name, await bindListener(rt, listener, bindPort(options, listener.port), table));
      } catch (error) {
        listenerErrors.push({ listener: listener.name, message: message(error) });
      }
    }
    contexts.retain(config.secrets);
    const endpoints = config.endpoints.flatMap((e) => e.endpoints);
    rt.pools.retain(endpoints);
    rt.h2Pools.retain(endpoints);
    rt.metrics.retain(() => liveNames(config));
    for (const e of listenerErrors) options.log(`listener ${e.listener}: ${e.message}`);
    for (const r of rejected)
      options.log(`config: ${r.type} ${r.name} rejected, its last good version kept: ${r.error}`);
    return rejected.length === 0 ? { ok: true, listenerErrors } : { ok: true, listenerErrors, rejected };
  }

  async function drainNow(drainMs: number, maxMs: number): Promise<void> {
    rt.draining = true;
    options.onDraining?.();
    const deadline = Date.now() + maxMs;
    options.log(
      `draining: serving ${drainMs} ms more, then waiting up to ${maxMs} ms for requests in flight`,
    );
    await sleep(Math.min(drainMs, maxMs));
    const closing = [...bound.values()].map((b) => closeListener(b, Math.max(0, deadline - Date.now())));
    // Upgraded (WebSocket) connections are not the HTTP server's to cut, so the deadline bounds the wait too.
    const cutoff = new AbortController();
    const late = sleep(Math.max(0, deadline - Date.now()) + 100, undefined, { signal: cutoff.signal }).catch(
      () => {},
    );
    await Promise.race([Promise.all(closing), late]);
    cutoff.abort();
    for (const tunnel of rt.tunnels) tunnel.destroy();
    drained = true;
    options.log('drained');
  }

  const view = {
    get ready() {
      return proxy.ready;
    },
    get draining() {
      return rt.draining;
    },
    get drained() {
      return drained;
    },
    notLive() {
      if (drained) return 'drained: its listeners are closed';
      // A stop in progress closes listeners on purpose; only once it is done is the process useless.
      if (rt.draining) return undefined;
      for (const b of bound.values()) {
        if (!b.server.server.listening) return `listener ${b.context.name} stopped listening`;
      }
      return undefined;
    },
    config: () => rt.snapshot?.config,
    version: () => (rt.snapshot === undefined ? undefined : { version: rt.snapshot.version, appliedAt }),
    inFlight: () => rt.metrics.inFlight,
    startDrain: () => void proxy.drain(),
    metrics: () => rt.metrics.render(),
  };
  started = startSideServers(view, {
    admin: options.adminAddress,
    metrics: options.metricsAddress,
    ready: options.readyAddress,
  }).then((servers) => {
    sideServers = servers;
  });
  started.catch(() => undefined); // reported through `started`
  return proxy;
}

// The proxy runtime: applies fleet configs (validate, compile, bind, swap), drains, and reports.

import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ApplyOutcome } from '../ir/apply-outcome.js';
import type { FleetConfig, Listener, TlsSecret, VirtualHost } from '../ir/fleet-config.js';
import type { FleetConfigChange } from '../ir/fleet-config-patch.js';
import { type RejectedResource, validateFleetResources } from '../ir/validate.js';
import { isPorticoError } from '../platform/errors.js';
import { closeAuthorizers, createAuthorizers } from './access/external-steps.js';
import { type AdminView, type SideServer, sideServerAddress, startSideServers } from './admin.js';
import {
  type CertificateTable,
  compileCertificates,
  createSecureContextCache,
  type SecureContextCache,
} from './downstream/tls.js';
import {
  type BoundListener,
  bindListener,
  closeListener,
  sameSocketLimits,
  setListenerPolicies,
  updateCertificates,
} from './listeners.js';
import {
  type ReconfigureOutcome,
  type RuntimeSettings,
  sameAccessLog,
  sameTracing,
  setProcessSettings,
} from './live-settings.js';
import { bindPort, type ProxyOptions, type ProxyOptionsInput, resolveProxyOptions } from './options.js';
import { createRateLimits } from './rate-limits.js';
import type { CompiledVirtualHost } from './routing/route-table.js';
import { compileSnapshot } from './routing/snapshot.js';
import type { ProxyRuntime } from './runtime.js';
import { AccessLog } from './telemetry/access-log.js';
import { createLiveNames, type LiveNamesTracker } from './telemetry/live-names.js';
import { createProxyMetrics } from './telemetry/metrics.js';
import { createTracing } from './telemetry/tracing.js';
import { createTlsUpstreamPools } from './upstream/backend-tls.js';
import { h2cUpstream, http1Upstream } from './upstream/by-protocol.js';
import { H2EndpointPool } from './upstream/h2c-pool.js';
import { EndpointPool } from './upstream/http1.js';
import { createUpstreamPools } from './upstream/pools.js';
import type { WorkerStats } from './workers/protocol.js';

export interface Proxy {
  /**
   * Validates, binds new listeners, swaps atomically. A resource that fails validation is rejected alone (its last
   * good version keeps serving, see validateFleetResources); a config that is not one leaves the previous serving.
   * Applied configs are treated as immutable: VirtualHost objects passed again unchanged (same object) are
   * not recompiled, so pass new objects for changed resources rather than editing old ones in place. `change`,
   * when the caller knows how `config` came from the config applied last, lets the proxy validate and compile
   * only that.
   */
  apply(config: unknown, version?: string, change?: FleetConfigChange): Promise<ApplyOutcome>;
  /** A config is applied and the proxy is not draining. */
  readonly ready: boolean;
  /** Resolves once the admin, metrics and readiness servers listen (rejects if one cannot bind). */
  readonly started: Promise<void>;
  /** Graceful: fail readiness, keep serving drainMs, stop accepting, wait for requests in flight up to maxMs. */
  drain(options?: { drainMs?: number; maxMs?: number }): Promise<void>;
  /** Immediate: closes every socket. */
  close(): Promise<void>;
  /**
   * Takes new settings while serving (log level, access log, tracing, drain, workers); refuses only what needs
   * another process: a proxy serving in its own process cannot add workers.
   */
  reconfigure(settings: RuntimeSettings): Promise<ReconfigureOutcome>;
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

function message(error: unknown): string {
  return isPorticoError(error) || error instanceof Error ? error.message : String(error);
}

/** Everything one in-process proxy holds between calls. */
interface ProxyState {
  rt: ProxyRuntime;
  options: ProxyOptions;
  /** Listening sockets by listener name. */
  bound: Map<string, BoundListener>;
  contexts: SecureContextCache;
  /** An applied VirtualHost object passed again is not compiled again. */
  compiledVirtualHosts: WeakMap<VirtualHost, CompiledVirtualHost>;
  /** The names metrics keep series for. */
  live: LiveNamesTracker;
  appliedAt: string;
  drained: boolean;
  sideServers: SideServer[];
  /** Where access log lines go (given in process, else stdout), kept for a log turned off and on again. */
  accessLogWrite: ((text: string) => void) | undefined;
}

export function createProxy(input: ProxyOptionsInput = {}): InProcessProxy {
  const options = resolveProxyOptions(input);
  const state: ProxyState = {
    rt: createRuntime(options),
    options,
    bound: new Map(),
    contexts: createSecureContextCache(),
    compiledVirtualHosts: new WeakMap(),
    live: createLiveNames(),
    appliedAt: '',
    drained: false,
    sideServers: [],
    accessLogWrite: options.accessLog?.write,
  };
  const rt = state.rt;
  let applying: Promise<unknown> = Promise.resolve();
  let drainPromise: Promise<void> | undefined;
  let started: Promise<void> = Promise.resolve();

  const proxy: InProcessProxy = {
    get ready() {
      return rt.snapshot !== undefined && !rt.draining;
    },
    get started() {
      return started;
    },
    apply(config, version, change) {
      // One apply at a time: binding is asynchronous and must not interleave.
      const next = applying.then(() => applyNow(state, config, version, change));
      applying = next.catch(() => undefined);
      return next;
    },
    drain(drainOptions = {}) {
      drainPromise ??= drainNow(
        state,
        drainOptions.drainMs ?? options.drainMs,
        drainOptions.maxMs ?? options.maxDrainMs,
      );
      return drainPromise;
    },
    close: () => closeNow(state),
    reconfigure: async (settings) => reconfigureNow(state, settings),
    addresses() {
      return [
        ...[...state.bound.values()].map((b) => ({
          listener: b.context.name,
          port: b.port,
          address: b.address,
        })),
        ...state.sideServers.map((s) => ({ listener: s.name, ...sideServerAddress(s) })),
      ];
    },
    inFlight: () => rt.metrics.inFlight,
    stats: () => ({ metrics: rt.metrics.snapshot(), notLive: notLive(state) }),
  };
  started = startSideServers(adminView(state, proxy), {
    admin: options.adminAddress,
    metrics: options.metricsAddress,
    ready: options.readyAddress,
  }).then((servers) => {
    state.sideServers = servers;
  });
  started.catch(() => undefined); // reported through `started`
  return proxy;
}

/** What every listener of the proxy shares: options, counters, upstream pools, the current snapshot. */
function createRuntime(options: ProxyOptions): ProxyRuntime {
  const h1Pool = {
    maxConnections: options.upstreamConnectionsPerEndpoint,
    idleTimeoutMs: options.upstreamIdleTimeoutMs,
    connectTimeoutMs: options.upstreamConnectTimeoutMs,
    sendTimeoutMs: options.upstreamSendTimeoutMs,
  };
  const h2Pool = {
    limits: options.http2,
    idleTimeoutMs: options.upstreamIdleTimeoutMs,
    connectTimeoutMs: options.upstreamConnectTimeoutMs,
    sendTimeoutMs: options.upstreamSendTimeoutMs,
  };
  const metrics = createProxyMetrics();
  const pools = createUpstreamPools((address, port, key) => new EndpointPool(address, port, key, h1Pool));
  const h2Pools = createUpstreamPools((address, port, key) => new H2EndpointPool(address, port, key, h2Pool));
  const tlsPools = createTlsUpstreamPools((tls, client) =>
    createUpstreamPools((address, port, key) => new EndpointPool(address, port, key, h1Pool, tls, client)),
  );
  const h2TlsPools = createTlsUpstreamPools((tls, client) =>
    createUpstreamPools((address, port, key) => new H2EndpointPool(address, port, key, h2Pool, tls, client)),
  );
  return {
    options,
    metrics,
    pools,
    h2Pools,
    tlsPools,
    h2TlsPools,
    upstreams: { http: http1Upstream(pools, tlsPools), h2c: h2cUpstream(h2Pools, h2TlsPools) },
    snapshot: undefined,
    draining: false,
    activeByEndpoint: new Map(),
    mirrorsInFlight: 0,
    tunnels: new Set(),
    rateLimits: createRateLimits(options, metrics),
    authorizers: createAuthorizers(),
    accessLog: options.accessLog === undefined ? undefined : new AccessLog(options.accessLog),
    tracing:
      options.tracing === undefined ? undefined : createTracing(options.tracing, metrics.spans, options.log),
  };
}

async function applyNow(
  state: ProxyState,
  value: unknown,
  version: string | undefined,
  given: FleetConfigChange | undefined,
): Promise<ApplyOutcome> {
  const { rt, options } = state;
  if (rt.draining) return { ok: false, error: 'proxy is draining' };
  let config: FleetConfig;
  let rejected: RejectedResource[];
  let snapshot: ReturnType<typeof compileSnapshot>;
  const previous = rt.snapshot;
  // A change counts only from the config serving now (an apply that failed in between makes it stale).
  const change =
    given !== undefined && given.since === previous?.config && given.config === value ? given : undefined;
  let compiledChange: FleetConfigChange | undefined;
  try {
    ({ config, rejected } = validateFleetResources(value, previous?.config, change));
    options.trace?.('proxy-validated', version);
    // A resource refused alone changed the config the change describes: compile it whole then.
    compiledChange = config === value ? change : undefined;
    snapshot = compileSnapshot(
      config,
      version ?? versionOf(config),
      state.compiledVirtualHosts,
      previous,
      compiledChange,
    );
    options.trace?.('proxy-compiled', version);
  } catch (error) {
    return { ok: false, error: message(error) };
  }
  const listenerErrors: ListenerError[] = [];
  const certificates = listenerCertificates(config, state.contexts, listenerErrors);
  state.appliedAt = new Date().toISOString();
  // Swap first: from here every new request, on any socket, routes by the new config.
  rt.snapshot = snapshot;
  options.trace?.('proxy-swapped', version);
  await rebindListeners(state, config, certificates, listenerErrors);
  // A changed client CA bundle leaves its contexts behind: only the bundles the listeners now use are kept.
  state.contexts.retain(config.secrets, new Set(config.listeners.map((l) => l.tls?.clientValidation?.caPem)));
  if (previous === undefined || config.endpoints !== previous.config.endpoints) {
    const endpoints = config.endpoints.flatMap((e) => e.endpoints);
    rt.pools.retain(endpoints);
    rt.h2Pools.retain(endpoints);
  }
  if (
    previous === undefined ||
    config.endpoints !== previous.config.endpoints ||
    config.clusters !== previous.config.clusters
  )
    retainTlsPools(rt, config);
  state.live.update(config, compiledChange);
  rt.metrics.retain(state.live.names);
  for (const e of listenerErrors) options.log.error(`listener ${e.listener}: ${e.message}`);
  for (const r of rejected)
    options.log.warn(`config: ${r.type} ${r.name} rejected, its last good version kept: ${r.error}`);
  return rejected.length === 0 ? { ok: true, listenerErrors } : { ok: true, listenerErrors, rejected };
}

type ListenerError = { listener: string; message: string };

/**
 * The listeners that can serve, each with its certificates (HTTPS only, else undefined); a listener whose
 * certificates do not compile is left out and its error recorded.
 */
function listenerCertificates(
  config: FleetConfig,
  contexts: SecureContextCache,
  listenerErrors: ListenerError[],
): Map<Listener, CertificateTable | undefined> {
  const secrets = new Map<string, TlsSecret>(config.secrets.map((s) => [s.name, s]));
  const usable = new Map<Listener, CertificateTable | undefined>();
  for (const listener of config.listeners) {
    try {
      usable.set(
        listener,
        // A TLS listener that passes every name through has no certificate of its own.
        listener.tls === undefined || listener.tls.certificates.every((c) => c.passthrough === true)
          ? undefined
          : compileCertificates(listener.tls, secrets, contexts),
      );
    } catch (error) {
      listenerErrors.push({ listener: listener.name, message: message(error) });
    }
  }
  return usable;
}

/**
 * Closes listeners the config dropped or changed the protocol of (one whose TLS failed keeps its old socket),
 * gives kept ones their new certificates, and binds new ones, recording bind failures.
 */
async function rebindListeners(
  state: ProxyState,
  config: FleetConfig,
  usable: Map<Listener, CertificateTable | undefined>,
  listenerErrors: ListenerError[],
): Promise<void> {
  const { bound, options } = state;
  const byName = new Map<string, Listener>();
  for (const listener of usable.keys()) byName.set(listener.name, listener);
  for (const [name, b] of bound) {
    const next = byName.get(name);
    if (next === undefined && config.listeners.some((l) => l.name === name)) continue; // bad TLS: keep old
    if (next === undefined || next.protocol !== b.protocol || !sameSocketLimits(next, b.listener)) {
      bound.delete(name);
      void closeListener(b, options.maxDrainMs);
    }
  }
  if (bound.size > 0) await sleep(0); // let closed listening sockets release their ports
  for (const [listener, table] of usable) {
    const existing = bound.get(listener.name);
    if (existing !== undefined) {
      existing.listener = listener;
      if (table !== undefined) updateCertificates(existing, table);
      setListenerPolicies(existing.context, listener, options.limits);
      continue;
    }
    try {
      bound.set(
        listener.name,
        await bindListener(state.rt, listener, bindPort(options, listener.port), table),
      );
    } catch (error) {
      listenerErrors.push({ listener: listener.name, message: message(error) });
    }
  }
}

async function drainNow(state: ProxyState, drainMs: number, maxMs: number): Promise<void> {
  const { rt, options } = state;
  rt.draining = true;
  options.onDraining?.();
  const deadline = Date.now() + maxMs;
  options.log.info(
    `draining: serving ${drainMs} ms more, then waiting up to ${maxMs} ms for requests in flight`,
  );
  await sleep(Math.min(drainMs, maxMs));
  const closing = [...state.bound.values()].map((b) => closeListener(b, Math.max(0, deadline - Date.now())));
  // Upgraded (WebSocket) connections are not the HTTP server's to cut, so the deadline bounds the wait too.
  const cutoff = new AbortController();
  const late = sleep(Math.max(0, deadline - Date.now()) + 100, undefined, { signal: cutoff.signal }).catch(
    () => {},
  );
  await Promise.race([Promise.all(closing), late]);
  cutoff.abort();
  for (const tunnel of rt.tunnels) tunnel.destroy();
  state.drained = true;
  options.log.info('drained');
}

/**
 * New settings, in place: a new access log and tracing when they changed (the old ones flush what they hold;
 * requests already past their start keep the ones they sampled with), the drain's times for the next drain.
 */
function reconfigureNow(state: ProxyState, settings: RuntimeSettings): ReconfigureOutcome {
  const { rt, options } = state;
  if (settings.workers !== 1)
    return {
      ok: false,
      error: `this proxy serves in its own process (one worker): ${settings.workers} workers need a restart`,
    };
  setProcessSettings(options, settings);
  if (!sameAccessLog(options.accessLog, settings.accessLog)) {
    const old = rt.accessLog;
    const write = options.accessLog?.write ?? state.accessLogWrite;
    options.accessLog = settings.accessLog === undefined ? undefined : { ...settings.accessLog, write };
    rt.accessLog = options.accessLog === undefined ? undefined : new AccessLog(options.accessLog);
    old?.flush();
  }
  if (!sameTracing(options.tracing, settings.tracing)) {
    const old = rt.tracing;
    options.tracing =
      settings.tracing === undefined ? undefined : { ...options.tracing, ...settings.tracing };
    rt.tracing =
      options.tracing === undefined
        ? undefined
        : createTracing(options.tracing, rt.metrics.spans, options.log);
    void old?.exporter.close();
  }
  return { ok: true };
}

/** Immediate: every socket closed, every pool emptied. */
async function closeNow(state: ProxyState): Promise<void> {
  const { rt } = state;
  rt.draining = true;
  const closing = [...state.bound.values(), ...state.sideServers].map(
    (b) =>
      new Promise<void>((resolve) => {
        b.server.close(() => resolve());
        b.server.closeAllConnections();
      }),
  );
  for (const tunnel of rt.tunnels) tunnel.destroy();
  state.bound.clear();
  state.sideServers = [];
  rt.pools.destroy();
  closeAuthorizers(rt.authorizers);
  rt.h2Pools.destroy();
  rt.tlsPools.destroy();
  rt.h2TlsPools.destroy();
  await Promise.all(closing);
  await rt.rateLimits.close();
  // The last requests' lines and spans are out before close() resolves (a process exits next).
  rt.accessLog?.flush();
  await rt.tracing?.exporter.close();
}

function notLive(state: ProxyState): string | undefined {
  if (state.drained) return 'drained: its listeners are closed';
  // A stop in progress closes listeners on purpose; only once it is done is the process useless.
  if (state.rt.draining) return undefined;
  for (const b of state.bound.values()) {
    if (!b.server.server.listening) return `listener ${b.context.name} stopped listening`;
  }
  return undefined;
}

/** What the admin, metrics and readiness servers show of this proxy. */
function adminView(state: ProxyState, proxy: InProcessProxy): AdminView {
  const { rt } = state;
  return {
    get ready() {
      return proxy.ready;
    },
    get draining() {
      return rt.draining;
    },
    get drained() {
      return state.drained;
    },
    notLive: () => notLive(state),
    config: () => rt.snapshot?.config,
    version: () =>
      rt.snapshot === undefined ? undefined : { version: rt.snapshot.version, appliedAt: state.appliedAt },
    inFlight: () => rt.metrics.inFlight,
    startDrain: () => void proxy.drain(),
    reconfigure: (settings) => proxy.reconfigure(settings),
    maxWorkers: state.options.maxWorkers,
    metrics: () => rt.metrics.render(),
  };
}

/** Keeps the TLS pools of the clusters that still speak TLS, per protocol; the rest close once idle. */
function retainTlsPools(rt: ProxyRuntime, config: FleetConfig): void {
  const endpoints = new Map(config.endpoints.map((e) => [e.name, e.endpoints]));
  const of = (protocol: 'http' | 'h2c') =>
    config.clusters.flatMap((c) =>
      c.tls === undefined || c.protocol !== protocol
        ? []
        : [{ tls: c.tls, endpoints: endpoints.get(c.name) ?? [] }],
    );
  rt.tlsPools.retain(of('http'));
  rt.h2TlsPools.retain(of('h2c'));
  // One client certificate per fleet: the first Gateway (by name) that names one; a merged fleet's others are unused.
  const name = config.gateways.find(
    (g) => g.backendClientCertificate !== undefined,
  )?.backendClientCertificate;
  const secret = name === undefined ? undefined : config.secrets.find((s) => s.name === name);
  const client =
    secret === undefined
      ? undefined
      : { certificatePem: secret.certificatePem, privateKeyPem: secret.privateKeyPem };
  rt.tlsPools.useClientCertificate(client);
  rt.h2TlsPools.useClientCertificate(client);
}

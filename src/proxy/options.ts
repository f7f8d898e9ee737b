// Every knob of the proxy runtime with its default, in one place.
import { MAX_PROXY_WORKERS } from '../ir/proxy-settings.js';
import { discardingLogger, type Logger, type LogLevel } from '../platform/log-line.js';
import type { StageTrace } from '../trace/propagation-trace.js';
import type { RateStore } from './limits/rate-store.js';
import type { AccessLogOptions } from './telemetry/access-log.js';
import type { TracingOptions } from './telemetry/span-exporter.js';

export type LoadBalancing = 'round-robin' | 'least-request';

export interface ProxyLimits {
  /** Largest request head (request line + headers) in bytes; larger gets 431. */
  maxHeaderSize: number;
  /** Most request headers accepted; more gets 431. */
  maxHeadersCount: number;
  /** A client must send the whole request head within this (slowloris). */
  headersTimeoutMs: number;
  /** A client must send the whole request (head and body) within this. */
  requestTimeoutMs: number;
  /**
   * A request body that delivers no byte for this long (while the proxy is reading it) is answered 408 and the
   * connection closed; an upstream exchange it holds is cancelled. Below the route timeout, so a stalled upload
   * frees what it holds before the route would give up.
   */
  requestBodyIdleTimeoutMs: number;
  /**
   * A request body takes an upstream connection only once it is complete or this many bytes are buffered: a slow
   * client holds no pooled connection while its (small) body trickles in.
   */
  requestBodyBufferBytes: number;
  /**
   * RequestMirror copies in flight at once, in each worker; past it a copy is skipped (counted), so a mirror that
   * hangs holds at most this many requests (and their buffered bodies) until their deadlines.
   */
  maxMirrorsInFlight: number;
  /** Idle keep-alive client connections are closed after this. */
  keepAliveTimeoutMs: number;
  /**
   * Connections open per listener at once, in each worker; past it a new one is closed at accept and counted
   * (portico_connections_refused_total), so a flood cannot take the process's file descriptors. 0: unlimited.
   */
  maxConnections: number;
  /**
   * A TLS handshake must finish within this (Node's own default holds a silent connection 120 s); on a TLS
   * (layer-4) listener, the ClientHello must arrive within it too. A listener's own tlsHandshakeTimeoutMs wins.
   */
  tlsHandshakeTimeoutMs: number;
  /**
   * Largest request body in bytes, unless a listener or route says otherwise; larger gets 413 (on content-length
   * at once, else as the body streams in). 0: no limit.
   */
  maxRequestBodyBytes: number;
}

/**
 * Layer-4 (TLS, TCP and UDP listener) limits; connections per listener are `ProxyLimits.maxConnections`. A
 * listener's own `limits` (ir ListenerLimits: clientHelloMaxBytes, maxUdpFlows, udpFlowIdleTimeoutMs) win over these.
 */
export interface Layer4Limits {
  /** TLS listeners: the largest ClientHello read for its server name; a larger one closes the connection. */
  clientHelloMaxBytes: number;
  /** UDP listeners: a client's flow (its upstream socket) with no datagram either way for this long ends. */
  udpFlowIdleTimeoutMs: number;
  /** UDP listeners: flows at once per listener, in each worker; a new client past it is dropped. */
  udpMaxFlows: number;
}

/** HTTP/2 limits, downstream and upstream (Node's own defaults allow unlimited concurrent streams). */
export interface Http2Limits {
  /** Streams a client may have open at once on one connection (SETTINGS_MAX_CONCURRENT_STREAMS). */
  maxConcurrentStreams: number;
  /** Largest header list (names, values, 32 bytes each) a client may send (SETTINGS_MAX_HEADER_LIST_SIZE). */
  maxHeaderListSize: number;
  /** Most header fields (pseudo-headers included) in one header block. */
  maxHeaderListPairs: number;
  /** Memory one session may use (MB) before new streams are refused with ENHANCE_YOUR_CALM. */
  maxSessionMemoryMb: number;
  /** Invalid frames tolerated per session before it is destroyed. */
  maxSessionInvalidFrames: number;
  /** Streams refused (over a limit) per session before it is destroyed. */
  maxSessionRejectedStreams: number;
  /**
   * Per-stream flow-control window we grant (SETTINGS_INITIAL_WINDOW_SIZE): what one stalled stream may pin
   * beyond the proxy's own buffers, so a connection's stalled uploads pin at most maxConcurrentStreams times it.
   */
  initialWindowSize: number;
  /**
   * Connection flow-control window we grant. It paces a connection but bounds no memory: Node returns it as soon
   * as DATA reaches a stream's buffer, read or not (docs/security.md, "What an uploader holds").
   */
  sessionWindowSize: number;
  /** Entries per SETTINGS frame accepted. */
  maxSettings: number;
  /** Our own unacknowledged PINGs at once. */
  maxOutstandingPings: number;
  /**
   * Streams a session may see reset (by the client's RST_STREAM, or by us over a client error: CVE-2023-44487,
   * CVE-2025-8671) per window; more gets GOAWAY(ENHANCE_YOUR_CALM) and the session destroyed.
   */
  maxStreamResetsPerWindow: number;
  /**
   * The same across all sessions of one client address (per worker): more cuts its sessions and closes its new
   * HTTP/2 connections at once until the window ends, so churning connections buys no more resets.
   */
  maxStreamResetsPerSource: number;
  streamResetWindowMs: number;
  /** A session with no frame for this long is closed (GOAWAY). */
  idleTimeoutMs: number;
  /**
   * A connection that chose HTTP/2 (ALPN, or the cleartext preface) must send its SETTINGS within this, else it
   * is closed: Node's session waits for them without a deadline, and its idle timeout GOAWAYs a client that
   * never reads it.
   */
  prefaceTimeoutMs: number;
  /**
   * Upstream requests (HTTP/1.1 connections or h2c streams) one downstream HTTP/2 connection holds at once; its
   * further requests wait for one of its own to end (downstream/h2/upstream-share.ts).
   */
  maxUpstreamPerSession: number;
  /** Upstream h2c: sessions per endpoint at most (each takes up to the peer's concurrent streams). */
  upstreamSessionsPerEndpoint: number;
  /** Upstream h2c: streams per session at most, below the peer's own limit when it is higher. */
  upstreamMaxConcurrentStreams: number;
}

export interface ProxyOptions {
  /** Address every listener binds. */
  bindAddress: string;
  /** Listener ports below 1024 bind at port + portOffset (unprivileged containers). */
  portOffset: number;
  /** Maps a Gateway listener port to the port to bind (tests pass `() => 0`); overrides portOffset. */
  portMap?: (port: number) => number;
  /**
   * Listeners bind with SO_REUSEPORT and a handle of their own (Node ≥ 22.12), so the workers of one proxy each
   * accept on the same port and the kernel spreads connections over them.
   */
  reusePort: boolean;
  /**
   * What moves a TCP or TLS listener's bytes: `native`, the relay thread of native/relay.c (Linux; the build
   * makes it), or `node`, Node's sockets. `native` falls back to `node`, with a warning, where the addon cannot
   * load.
   */
  layer4Relay: 'native' | 'node';
  /** `host:port` of the admin API (config dump, drain, stats); absent: off. */
  adminAddress?: string;
  /** `host:port` of Prometheus metrics; absent: off. */
  metricsAddress?: string;
  /** `host:port` of the readiness endpoint; absent: off. */
  readyAddress?: string;
  limits: ProxyLimits;
  http2: Http2Limits;
  layer4: Layer4Limits;
  /** Pooled upstream connections per endpoint, at most. */
  upstreamConnectionsPerEndpoint: number;
  /** Idle pooled upstream connections are closed after this (below typical backend keep-alive of 5 s). */
  upstreamIdleTimeoutMs: number;
  /** A connection to an upstream endpoint must be established within this (else 502). */
  upstreamConnectTimeoutMs: number;
  /**
   * An upstream that takes no byte of a request body for this long (its window or socket full) fails the request:
   * 504 before a response head, a cut stream after. Every route kind, with or without a route timeout.
   */
  upstreamSendTimeoutMs: number;
  loadBalancing: LoadBalancing;
  /** Drain: keep serving this long after readiness fails, so load balancers stop sending. */
  drainMs: number;
  /** Drain: give up waiting for requests in flight after this (from drain start). */
  maxDrainMs: number;
  /** The most workers a settings change (PUT /settings) may ask for: its supervisor's cap, not the machine's. */
  maxWorkers: number;
  /** One line per event; never receives secrets. */
  log: Logger;
  /** Changes the level of `log` (its creator's to give): settings changed in place may change it. */
  setLogLevel?: (level: LogLevel) => void;
  /** One line per finished request (`portico proxy` turns it on by default); absent: off. */
  accessLog?: AccessLogOptions;
  /** W3C trace context and OTLP spans; absent: off. */
  tracing?: TracingOptions;
  /** Called once when a drain starts (signal or admin API), e.g. to stop claiming to serve. */
  onDraining?: () => void;
  /** Told when a config is validated, compiled and swapped in (diagnostics: `--trace-events`). */
  trace?: StageTrace;
  /**
   * Where Local rate limits lease their tokens: a worker's primary (over IPC), so that a limit holds for the
   * whole proxy; absent: a table of token buckets in this process.
   */
  localRateStore?: RateStore;
}

export const DEFAULT_PROXY_OPTIONS: ProxyOptions = {
  bindAddress: '0.0.0.0',
  portOffset: 0,
  reusePort: false,
  layer4Relay: 'native',
  limits: {
    maxHeaderSize: 16 * 1024,
    maxHeadersCount: 100,
    headersTimeoutMs: 10_000,
    requestTimeoutMs: 300_000,
    requestBodyIdleTimeoutMs: 10_000,
    requestBodyBufferBytes: 64 * 1024,
    maxMirrorsInFlight: 1024,
    keepAliveTimeoutMs: 60_000,
    maxConnections: 16_384,
    tlsHandshakeTimeoutMs: 10_000,
    maxRequestBodyBytes: 0,
  },
  layer4: {
    clientHelloMaxBytes: 16 * 1024,
    udpFlowIdleTimeoutMs: 60_000,
    udpMaxFlows: 8192,
  },
  http2: {
    maxConcurrentStreams: 128,
    maxHeaderListSize: 16 * 1024,
    maxHeaderListPairs: 104,
    maxSessionMemoryMb: 10,
    maxSessionInvalidFrames: 100,
    maxSessionRejectedStreams: 100,
    initialWindowSize: 64 * 1024,
    sessionWindowSize: 1024 * 1024,
    maxSettings: 32,
    maxOutstandingPings: 10,
    maxStreamResetsPerWindow: 400,
    maxStreamResetsPerSource: 2000,
    streamResetWindowMs: 10_000,
    idleTimeoutMs: 60_000,
    prefaceTimeoutMs: 10_000,
    maxUpstreamPerSession: 32,
    upstreamSessionsPerEndpoint: 16,
    upstreamMaxConcurrentStreams: 100,
  },
  upstreamConnectionsPerEndpoint: 128,
  upstreamIdleTimeoutMs: 4_000,
  upstreamConnectTimeoutMs: 10_000,
  upstreamSendTimeoutMs: 60_000,
  loadBalancing: 'round-robin',
  drainMs: 5_000,
  maxDrainMs: 60_000,
  maxWorkers: MAX_PROXY_WORKERS,
  log: discardingLogger,
};

export type ProxyOptionsInput = Partial<Omit<ProxyOptions, 'limits' | 'http2' | 'layer4'>> & {
  limits?: Partial<ProxyLimits>;
  http2?: Partial<Http2Limits>;
  layer4?: Partial<Layer4Limits>;
};

export function resolveProxyOptions(input: ProxyOptionsInput = {}): ProxyOptions {
  const defined = Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined));
  return {
    ...DEFAULT_PROXY_OPTIONS,
    ...defined,
    limits: { ...DEFAULT_PROXY_OPTIONS.limits, ...input.limits },
    http2: { ...DEFAULT_PROXY_OPTIONS.http2, ...input.http2 },
    layer4: { ...DEFAULT_PROXY_OPTIONS.layer4, ...input.layer4 },
  };
}

/** The port a Gateway listener port binds on this proxy. */
export function bindPort(options: ProxyOptions, port: number): number {
  if (options.portMap !== undefined) return options.portMap(port);
  return port < 1024 ? port + options.portOffset : port;
}

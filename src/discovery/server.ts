// The discovery server: streams each proxy its fleet's config as named resources (everything on connect,
// then only what changed) over TLS 1.3 gRPC, and records what every proxy applied (Ack) or rejected (Nack).
import { EventEmitter } from 'node:events';
import {
  type handleBidiStreamingCall,
  Metadata,
  Server,
  ServerCredentials,
  type ServerDuplexStream,
  status,
} from '@grpc/grpc-js';
import { fleetOfSubjectAltName } from '../certificates/certs.js';
import { FLEET_CONFIG_SCHEMA_VERSION, FLEET_RESOURCE_TYPES, type FleetConfig } from '../ir/fleet-config.js';
import { PorticoError } from '../platform/errors.js';
import type { StageTrace } from '../trace/propagation-trace.js';
import type { DiscoveryLog } from './log.js';
import type { Ack, ClientMessage, Hello, Nack, ServerMessage } from './protocol.js';
import { discoveryService } from './protocol.js';
import { ackReport, nackError } from './proxy-report.js';
import { type ResourceDelta, type ServedResourceSet, updateResourceSet } from './resources.js';
import { createTlsFront, type TlsFront } from './tls-front.js';
import { createTokenBucket, type RateLimit, type TokenBucket } from './token-bucket.js';
import { createTokenCache, type TokenCache } from './token-cache.js';

export interface Identity {
  username: string;
  groups: string[];
  extra: Record<string, string[]>;
  /** When the credential stops being valid (ms since the epoch); the stream is closed then. */
  expiresAt?: number;
}

/**
 * `mtls`: the client certificate (from the CA) names one fleet, and receives only that fleet's config.
 * `token`: a bearer token, authenticated and then authorized by the caller's functions.
 */
export type DiscoveryAuth =
  | { mode: 'mtls' }
  | {
      mode: 'token';
      /** Resolves the bearer token to an identity; rejects when it is not valid (the message is shown to the peer). */
      authenticate(token: string): Promise<Identity>;
      authorize(identity: Identity, request: { fleet: string; node: string }): boolean | Promise<boolean>;
    };

export interface DiscoveryServerOptions {
  /** `host:port`; port 0 lets the OS choose. */
  address: string;
  tls: { caPem: string; certPem: string; keyPem: string };
  auth: DiscoveryAuth;
  log?: DiscoveryLog;
  /** A stream that names no node and fleet within this time is closed; a connection without an authorized
   * stream too. Default 10000. */
  helloTimeoutMs?: number;
  /** A TLS handshake must finish within this. Default 5000. */
  handshakeTimeoutMs?: number;
  /** Connections without an authorized stream yet (handshaking, or waiting for a hello), at most. Default 512. */
  maxUnauthorizedConnections?: number;
  /** Of those, from one non-loopback source address at most, so a few pods cannot lock out the proxies. Default 8. */
  maxUnauthorizedPerAddress?: number;
  /** Hold loopback sources to the per-address cap too. Default false: standalone, every proxy is loopback. */
  capLoopbackSources?: boolean;
  /** Streams open at once on one connection (a proxy needs one). Default 8. */
  maxStreamsPerConnection?: number;
  /** Token mode: how long a token review stands, and how many are kept. Default 120 s, 4096. */
  tokenReviewCache?: { ttlMs: number; maxEntries: number };
  /** Token mode: reviews one connection may cause (cached answers are free). Default 4, then 1 a minute. */
  reviewRate?: RateLimit;
  /** Acks and Nacks one stream may have handled; beyond it only the latest waits. Default 16, then 4/s. */
  reportRate?: RateLimit;
  /** Told when a fleet's new config is diffed (diagnostics: `--trace-events`). */
  trace?: StageTrace;
}

export interface NodeState {
  /** Unique per stream: a node that reconnects before its old stream is gone appears twice, briefly. */
  stream: number;
  node: string;
  fleet: string;
  /** ISO 8601. */
  connectedAt: string;
  appliedVersion?: string;
  /** `<namespace>/<name>` → generation, of the config the node last applied. */
  appliedGateways: Record<string, number>;
  /** The last Nack's error (with its version), cleared by the next Ack. */
  lastError?: string;
  listenerErrors: { listener: string; message: string }[];
}

export interface DiscoveryServer {
  start(): Promise<{ port: number }>;
  close(): Promise<void>;
  setFleet(config: FleetConfig): void;
  removeFleet(fleet: string): void;
  nodes(): NodeState[];
  /** Fired on connect, disconnect, and an Ack or Nack that changes what the node reports. */
  on(event: 'change', listener: () => void): void;
  off(event: 'change', listener: () => void): void;
}

type Call = ServerDuplexStream<ClientMessage, ServerMessage>;

interface Stream {
  id: number;
  call: Call;
  state: NodeState;
  subscribed: boolean;
  closed: boolean;
  /** Set after a Nack: the proxy ignores deltas until it gets the whole fleet again. */
  needsFull: boolean;
  /** The version of the last full message sent: a Nack of something older needs no second one. */
  fullSentVersion?: string;
  timers: NodeJS.Timeout[];
  /** Acks and Nacks beyond this bucket's rate are coalesced: only the latest waits, in `deferred`. */
  reports: TokenBucket;
  deferred?: ClientMessage;
  deferTimer?: NodeJS.Timeout;
  /** What the node reported last, so a repeated report changes nothing. */
  reported: string;
}

interface Fleet {
  /** False until setFleet provides it (and again after removeFleet): its streams wait. */
  known: boolean;
  version: number;
  /** Updated in place by setFleet; full messages list it in resource type order. */
  resources: ServedResourceSet;
  /** The config `resources` was last updated from (its unchanged lists and objects are skipped next time). */
  config?: FleetConfig;
  streams: Set<Stream>;
}

const DEFAULTS = {
  helloTimeoutMs: 10_000,
  handshakeTimeoutMs: 5_000,
  maxUnauthorizedConnections: 512,
  maxUnauthorizedPerAddress: 8,
  maxStreamsPerConnection: 8,
  tokenReviewCache: { ttlMs: 120_000, maxEntries: 4096 },
  reviewRate: { burst: 4, perSecond: 1 / 60 },
  reportRate: { burst: 16, perSecond: 4 },
} as const;
// setTimeout cannot wait longer than 2^31-1 ms; longer expiries re-arm.
const MAX_TIMER_MS = 2_147_483_647;
const SHUTDOWN_GRACE_MS = 2_000;
const MAX_CLIENT_MESSAGE_BYTES = 1024 * 1024;

export function createDiscoveryServer(options: DiscoveryServerOptions): DiscoveryServer {
  const log: DiscoveryLog = options.log ?? (() => {});
  const helloTimeoutMs = options.helloTimeoutMs ?? DEFAULTS.helloTimeoutMs;
  const events = new EventEmitter();
  const fleets = new Map<string, Fleet>();
  const streams = new Set<Stream>();
  let server: Server | undefined;
  let front: TlsFront | undefined;
  // One counter for all fleets: versions stay monotonic even when a fleet is removed and comes back. It starts
  // from the clock, so a proxy that outlives its controller never sees one version name two configs.
  let versionCounter = Date.now();
  let nonceCounter = 0;
  let streamCounter = 0;
  const auth = options.auth;
  const tokens: TokenCache | undefined =
    auth.mode === 'token'
      ? createTokenCache({
          authenticate: (token) => auth.authenticate(token),
          ...(options.tokenReviewCache ?? DEFAULTS.tokenReviewCache),
        })
      : undefined;

  const changed = (): void => {
    events.emit('change');
  };

  function fleetState(name: string): Fleet {
    let fleet = fleets.get(name);
    if (fleet === undefined) {
      fleet = { known: false, version: 0, resources: new Map(), streams: new Set() };
      fleets.set(name, fleet);
    }
    return fleet;
  }

  function message(fleet: Fleet, full: boolean, delta?: ResourceDelta): ServerMessage {
    const resources = full ? inTypeOrder([...fleet.resources.values()]) : (delta?.changed ?? []);
    return {
      version: String(fleet.version),
      nonce: String(++nonceCounter),
      full,
      schemaVersion: FLEET_CONFIG_SCHEMA_VERSION,
      resources: resources.map((r) => ({ type: r.type, name: r.name, body: Buffer.from(r.json, 'utf8') })),
      removed: full ? [] : (delta?.removed ?? []),
    };
  }

  function send(stream: Stream, payload: ServerMessage): void {
    if (stream.closed) return;
    if (payload.full) {
      stream.needsFull = false;
      stream.fullSentVersion = payload.version;
    }
    stream.call.write(payload);
  }

  function fail(stream: Stream, code: status, details: string): void {
    if (stream.closed) return;
    log('info', `discovery: closing stream ${stream.id} (${describe(stream)}): ${status[code]}: ${details}`);
    stream.call.emit('error', { code, details, metadata: new Metadata() });
    drop(stream);
  }

  function drop(stream: Stream): void {
    if (stream.closed) return;
    stream.closed = true;
    for (const timer of stream.timers) clearTimeout(timer);
    clearTimeout(stream.deferTimer);
    delete stream.deferred;
    streams.delete(stream);
    if (stream.subscribed) {
      const fleet = fleets.get(stream.state.fleet);
      fleet?.streams.delete(stream);
      if (fleet !== undefined && !fleet.known && fleet.streams.size === 0) fleets.delete(stream.state.fleet);
      log('info', `discovery: ${describe(stream)} disconnected`);
      changed();
    }
  }

  function expireAt(stream: Stream, expiresAt: number): void {
    if (stream.closed) return;
    const wait = expiresAt - Date.now();
    if (wait <= 0) {
      fail(stream, status.UNAUTHENTICATED, 'token expired; reconnect with a fresh token');
      return;
    }
    stream.timers.push(setTimeout(() => expireAt(stream, expiresAt), Math.min(wait, MAX_TIMER_MS)));
  }

  async function authenticate(stream: Stream): Promise<Identity | undefined> {
    if (tokens === undefined) {
      // The TLS handshake already refused peers without a certificate from our CA; this guards against
      // a transport that let one through anyway.
      const peer = stream.call.getAuthContext()?.sslPeerCertificate;
      if (peer === undefined || Object.keys(peer).length === 0) {
        fail(stream, status.UNAUTHENTICATED, 'a client certificate signed by the discovery CA is required');
        return undefined;
      }
      const commonName = peer.subject?.CN;
      const fleet = fleetOfSubjectAltName(peer.subjectaltname);
      return {
        username: Array.isArray(commonName) ? commonName.join(',') : (commonName ?? ''),
        groups: [],
        extra: fleet === undefined ? {} : { fleet: [fleet] },
      };
    }
    const header = stream.call.metadata.get('authorization')[0];
    const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (match === null) {
      fail(stream, status.UNAUTHENTICATED, "missing bearer token: send 'authorization: Bearer <token>'");
      return undefined;
    }
    const token = match[1]!;
    // A review the cache cannot answer costs the API server: each connection has a budget of them.
    if (!tokens.has(token) && front?.allowReview(stream.call.getPeer()) !== true) {
      fail(stream, status.RESOURCE_EXHAUSTED, 'too many token reviews on this connection; reconnect later');
      return undefined;
    }
    let identity: Identity;
    try {
      identity = await tokens.authenticate(token);
    } catch (error) {
      fail(stream, status.UNAUTHENTICATED, `token rejected: ${(error as Error).message}`);
      return undefined;
    }
    if (identity.expiresAt !== undefined) expireAt(stream, identity.expiresAt);
    return stream.closed ? undefined : identity;
  }

  async function onHello(stream: Stream, hello: Hello, identity: Identity): Promise<void> {
    if (hello.node === '' || hello.fleet === '') {
      fail(stream, status.INVALID_ARGUMENT, 'the first message must be a hello naming node and fleet');
      return;
    }
    stream.state.node = hello.node;
    stream.state.fleet = hello.fleet;
    if (auth.mode === 'token') {
      let allowed: boolean;
      try {
        allowed = await auth.authorize(identity, { fleet: hello.fleet, node: hello.node });
      } catch (error) {
        fail(stream, status.INTERNAL, `authorization failed: ${(error as Error).message}`);
        return;
      }
      if (!allowed) {
        fail(
          stream,
          status.PERMISSION_DENIED,
          `${identity.username} is not allowed to receive the config of fleet '${hello.fleet}' as node '${hello.node}'`,
        );
        return;
      }
    }
    if (auth.mode === 'mtls') {
      // Authorized like a token: the certificate's own fleet, nothing else (DESIGN §5).
      const own = identity.extra.fleet?.[0];
      if (own !== hello.fleet) {
        const why =
          own === undefined
            ? 'the client certificate names no fleet (each fleet has its own certificate)'
            : `the client certificate of fleet '${own}' may not receive the config of fleet '${hello.fleet}'`;
        fail(stream, status.PERMISSION_DENIED, why);
        return;
      }
    }
    if (stream.closed) return;
    const fleet = fleetState(hello.fleet);
    // One stream per node: a second one claiming a connected node id is someone else (or a stale duplicate).
    for (const other of fleet.streams) {
      if (other.closed || other.state.node !== hello.node) continue;
      fail(
        stream,
        status.ALREADY_EXISTS,
        `node '${hello.node}' of fleet '${hello.fleet}' is already connected`,
      );
      return;
    }
    front?.authorized(stream.call.getPeer());
    stream.subscribed = true;
    fleet.streams.add(stream);
    log('info', `discovery: ${describe(stream)} connected${fleet.known ? '' : ' (fleet not known yet)'}`);
    if (fleet.known) send(stream, message(fleet, true));
    changed();
  }

  /** Fires `change` (and logs an error) only when what the node reports differs from its last report. */
  function reportChanged(stream: Stream): void {
    const { appliedVersion, appliedGateways, listenerErrors, lastError } = stream.state;
    const reported = JSON.stringify([appliedVersion, appliedGateways, listenerErrors, lastError ?? null]);
    if (reported === stream.reported) return;
    stream.reported = reported;
    if (lastError !== undefined) log('warn', `discovery: ${describe(stream)} ${lastError}`);
    changed();
  }

  function onAck(stream: Stream, ack: Ack): void {
    const state = stream.state;
    const report = ackReport(ack);
    state.appliedVersion = report.appliedVersion;
    state.appliedGateways = report.appliedGateways;
    state.listenerErrors = report.listenerErrors;
    if (report.error === undefined) delete state.lastError;
    else state.lastError = report.error;
    reportChanged(stream);
  }

  function onNack(stream: Stream, nack: Nack): void {
    stream.state.lastError = nackError(nack);
    // The proxy now ignores deltas; send everything when there is something newer than what it rejected
    // (once per version: a full message of the current version is already on its way otherwise).
    const fleet = fleets.get(stream.state.fleet);
    const current = String(fleet?.version);
    if (fleet?.known && current !== nack.version) {
      if (stream.fullSentVersion !== current) send(stream, message(fleet, true));
    } else stream.needsFull = true;
    reportChanged(stream);
  }

  /** Within the stream's rate at once; beyond it the latest report waits for a token, replacing any before it. */
  function onReport(stream: Stream, received: ClientMessage): void {
    if (stream.closed) return;
    if (stream.deferTimer === undefined && stream.reports.take()) {
      if (received.kind === 'ack' && received.ack) onAck(stream, received.ack);
      else if (received.kind === 'nack' && received.nack) onNack(stream, received.nack);
      return;
    }
    stream.deferred = received;
    if (stream.deferTimer !== undefined) return;
    stream.deferTimer = setTimeout(() => {
      delete stream.deferTimer;
      const next = stream.deferred;
      delete stream.deferred;
      if (next !== undefined) onReport(stream, next);
    }, stream.reports.waitMs());
  }

  const handle: handleBidiStreamingCall<ClientMessage, ServerMessage> = (call) => {
    const stream: Stream = {
      id: ++streamCounter,
      call,
      state: {
        stream: 0,
        node: '',
        fleet: '',
        connectedAt: new Date().toISOString(),
        appliedGateways: {},
        listenerErrors: [],
      },
      subscribed: false,
      closed: false,
      needsFull: false,
      timers: [],
      reports: createTokenBucket(options.reportRate ?? DEFAULTS.reportRate),
      reported: '',
    };
    stream.state.stream = stream.id;
    streams.add(stream);
    let sawHello = false;
    stream.timers.push(
      setTimeout(() => {
        if (!sawHello) fail(stream, status.DEADLINE_EXCEEDED, `no hello within ${helloTimeoutMs} ms`);
      }, helloTimeoutMs),
    );
    call.on('data', (received: ClientMessage) => {
      if (stream.closed) return;
      if (received.kind === 'hello' && received.hello) {
        if (sawHello) return fail(stream, status.INVALID_ARGUMENT, 'hello sent twice on one stream');
        sawHello = true;
        const hello = received.hello;
        // Authenticated only after a hello: a stream that sends none costs no token review.
        void authenticate(stream)
          .then((who) => (who === undefined ? undefined : onHello(stream, hello, who)))
          .catch((error: unknown) =>
            fail(stream, status.INTERNAL, `hello failed: ${(error as Error).message}`),
          );
      } else if (!stream.subscribed) {
        // Ack or Nack before the hello was accepted: nothing was sent that it could answer.
      } else onReport(stream, received);
    });
    call.on('end', () => {
      drop(stream);
      call.end();
    });
    call.on('error', () => drop(stream));
    call.on('cancelled', () => drop(stream));
  };

  return {
    async start() {
      if (server !== undefined) throw new PorticoError('E_DISCOVERY', 'discovery server already started');
      const grpcServer = new Server({
        'grpc.keepalive_time_ms': 30_000,
        'grpc.keepalive_timeout_ms': 10_000,
        'grpc.max_send_message_length': -1,
        'grpc.max_concurrent_streams': options.maxStreamsPerConnection ?? DEFAULTS.maxStreamsPerConnection,
        // A proxy sends a hello, Acks and Nacks: small messages; a larger one is refused before it is decoded.
        'grpc.max_receive_message_length': MAX_CLIENT_MESSAGE_BYTES,
      });
      grpcServer.addService(discoveryService(), { Stream: handle });
      // TLS is ours (tls-front.ts: deadlines and a cap gRPC does not offer); gRPC speaks HTTP/2 on the secured socket.
      const injector = grpcServer.createConnectionInjector(ServerCredentials.createInsecure());
      const tlsFront = createTlsFront({
        address: options.address,
        tls: options.tls,
        requireClientCertificate: options.auth.mode === 'mtls',
        handshakeTimeoutMs: options.handshakeTimeoutMs ?? DEFAULTS.handshakeTimeoutMs,
        // Past the stream's own hello deadline, which says more to a slow proxy than a closed connection.
        authorizeWithinMs: helloTimeoutMs + (options.handshakeTimeoutMs ?? DEFAULTS.handshakeTimeoutMs),
        maxUnauthorizedConnections: options.maxUnauthorizedConnections ?? DEFAULTS.maxUnauthorizedConnections,
        maxUnauthorizedPerAddress: options.maxUnauthorizedPerAddress ?? DEFAULTS.maxUnauthorizedPerAddress,
        capLoopbackSources: options.capLoopbackSources ?? false,
        reviewRate: options.reviewRate ?? DEFAULTS.reviewRate,
        onSecureConnection: (socket) => injector.injectConnection(socket),
        log: (message) => log('info', message),
      });
      server = grpcServer;
      front = tlsFront;
      let port: number;
      try {
        port = await tlsFront.listen();
      } catch (error) {
        server = undefined;
        front = undefined;
        grpcServer.forceShutdown();
        throw error;
      }
      log(
        'info',
        `discovery: listening on ${options.address.replace(/:\d+$/, '')}:${port} (${options.auth.mode})`,
      );
      return { port };
    },

    async close() {
      for (const stream of [...streams]) fail(stream, status.UNAVAILABLE, 'discovery server shutting down');
      const grpcServer = server;
      server = undefined;
      front?.close();
      front = undefined;
      if (grpcServer === undefined) return;
      await new Promise<void>((resolve) => {
        const force = setTimeout(() => {
          grpcServer.forceShutdown();
          resolve();
        }, SHUTDOWN_GRACE_MS);
        grpcServer.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      });
    },

    setFleet(config) {
      checkFleetShape(config);
      const fleet = fleetState(config.fleet);
      const wasKnown = fleet.known;
      const delta = updateResourceSet(fleet.resources, config, fleet.config);
      fleet.config = config;
      if (wasKnown && delta.changed.length === 0 && delta.removed.length === 0) return;
      fleet.version = ++versionCounter;
      fleet.known = true;
      log(
        'debug',
        `discovery: fleet ${config.fleet} version ${fleet.version}: ${delta.changed.length} changed, ${delta.removed.length} removed`,
      );
      options.trace?.('discovery-diffed', String(fleet.version));
      let deltaMessage: ServerMessage | undefined;
      for (const stream of fleet.streams) {
        if (!wasKnown || stream.needsFull) send(stream, message(fleet, true));
        else {
          deltaMessage ??= message(fleet, false, delta);
          send(stream, deltaMessage);
        }
      }
    },

    removeFleet(name) {
      const fleet = fleets.get(name);
      if (fleet === undefined) return;
      // Its proxies stay connected and keep their last config; they get everything if the fleet returns.
      fleet.known = false;
      fleet.resources = new Map();
      delete fleet.config;
      if (fleet.streams.size === 0) fleets.delete(name);
    },

    nodes() {
      return [...streams]
        .filter((s) => s.subscribed && !s.closed)
        .map((s) => ({
          ...s.state,
          appliedGateways: { ...s.state.appliedGateways },
          listenerErrors: s.state.listenerErrors.map((e) => ({ ...e })),
        }));
    },

    on(event, listener) {
      events.on(event, listener);
    },
    off(event, listener) {
      events.off(event, listener);
    },
  };
}

/** Resources grouped by type in dependency order (stable within a type). */
function inTypeOrder<T extends { type: (typeof FLEET_RESOURCE_TYPES)[number] }>(resources: T[]): T[] {
  return resources.sort(
    (a, b) => FLEET_RESOURCE_TYPES.indexOf(a.type) - FLEET_RESOURCE_TYPES.indexOf(b.type),
  );
}

function describe(stream: Stream): string {
  return stream.state.node === ''
    ? `stream ${stream.id}`
    : `node '${stream.state.node}' of fleet '${stream.state.fleet}'`;
}

/** The controller hands over translator output; a malformed one is a bug, reported with the field. */
function checkFleetShape(config: FleetConfig): void {
  if (typeof config.fleet !== 'string' || config.fleet === '') {
    throw new PorticoError('E_FLEET_CONFIG', 'setFleet: fleet config has no fleet key');
  }
  for (const type of FLEET_RESOURCE_TYPES) {
    const list: unknown = config[type];
    if (!Array.isArray(list))
      throw new PorticoError('E_FLEET_CONFIG', `setFleet: fleet '${config.fleet}': ${type} is not a list`);
    // Names in strictly increasing order (the contract's sort) are unique without a Set of them all.
    let sorted = true;
    let previous = '';
    for (const [i, item] of list.entries()) {
      const name = (item as { name?: unknown } | null)?.name;
      if (typeof name !== 'string' || name === '') {
        throw new PorticoError(
          'E_FLEET_CONFIG',
          `setFleet: fleet '${config.fleet}': ${type}[${i}].name is missing`,
        );
      }
      if (i > 0 && !(previous < name)) sorted = false;
      previous = name;
    }
    if (sorted) continue;
    const seen = new Set<string>();
    for (const [i, item] of list.entries()) {
      const name = (item as { name: string }).name;
      if (seen.has(name)) {
        throw new PorticoError(
          'E_FLEET_CONFIG',
          `setFleet: fleet '${config.fleet}': ${type}[${i}].name '${name}' is not unique`,
        );
      }
      seen.add(name);
    }
  }
}

// The proxy's side of discovery: keeps one stream to the server, turns full and delta updates into whole
// FleetConfigs for `apply`, and answers Ack or Nack. While disconnected the proxy keeps serving what it applied.
import { isIP } from 'node:net';
import { checkServerIdentity, type PeerCertificate } from 'node:tls';
import {
  Client,
  type ClientDuplexStream,
  connectivityState,
  Metadata,
  type StatusObject,
  status,
} from '@grpc/grpc-js';
import { FLEET_CONFIG_SCHEMA_VERSION, type FleetConfig } from '../ir/fleet-config.js';
import { patchFleetConfig } from '../ir/fleet-config-patch.js';
import { DISCOVERY_SERVER_NAME } from '../ir/well-known.js';
import type { StageTrace } from '../trace/propagation-trace.js';
import { type Backoff, reconnectDelayMs } from './backoff.js';
import type { DiscoveryLog } from './log.js';
import { type ClientMessage, type ServerMessage, streamMethod } from './protocol.js';
import { assembleFleetConfig, parseResource, type ReceivedResource, resourceKey } from './resources.js';
import { createTls13ChannelCredentials } from './tls.js';

/** A resource refused alone: the proxy keeps its last good version (or leaves a new one out). */
export interface RejectedResource {
  type: string;
  name: string;
  error: string;
}

export type ApplyOutcome =
  | { ok: true; listenerErrors: { listener: string; message: string }[]; rejected?: RejectedResource[] }
  | { ok: false; error: string };

export interface DiscoveryClientOptions {
  /** `host:port` of the discovery server. */
  address: string;
  fleet: string;
  node: string;
  /** serverName: the name to verify in the server certificate; default the host of `address`. */
  tls: { caPem: string; certPem?: string; keyPem?: string; serverName?: string };
  /** Token mode: called on every (re)connect, so a rotated token file is picked up. */
  token?: () => Promise<string>;
  /**
   * The CA and client certificate anew for each new channel, so rotated certificate files are picked up;
   * `tls` (the PEMs read at start) is used when absent or when it throws.
   */
  reloadTls?: () => { caPem: string; certPem?: string; keyPem?: string };
  /** Applies a whole config; resolve `{ ok: false }` (or throw) to reject it. Never called concurrently. */
  apply: (config: FleetConfig, version: string) => Promise<ApplyOutcome>;
  backoff?: Backoff;
  /** How long one connection attempt may take before it is abandoned. Default 10 s. */
  connectTimeoutMs?: number;
  log?: DiscoveryLog;
  /** Told when a config arrives, is assembled and is applied (diagnostics: `--trace-events`). */
  trace?: StageTrace;
}

export interface DiscoveryClientStatus {
  connected: boolean;
  appliedVersion?: string;
  lastError?: string;
}

export interface DiscoveryClient {
  stop(): Promise<void>;
  status(): DiscoveryClientStatus;
  /**
   * Unless a stream is open, reconnect now on a fresh channel instead of after the backoff (a controller that just
   * started says so). An open stream is left alone.
   */
  reconnectNow(): void;
}

// Capped at 10 s: after a controller restart every proxy is back within a cap of the new one serving.
const DEFAULT_BACKOFF = { initialMs: 500, maxMs: 10_000 } as const;
// Longer than the server's 5 s TLS handshake bound, shorter than anything a restart should wait for.
const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
// The server certificate's primary name: a harmless SNI when the target is an IP address.

type Stream = ClientDuplexStream<ClientMessage, ServerMessage>;

export function startDiscoveryClient(options: DiscoveryClientOptions): DiscoveryClient {
  const log: DiscoveryLog = options.log ?? (() => {});
  const trace: StageTrace = options.trace ?? (() => {});
  const backoff = options.backoff ?? DEFAULT_BACKOFF;
  const connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const method = streamMethod();
  const identity = serverIdentity(options.address, options.tls.serverName);
  const currentTls = () => {
    if (options.reloadTls === undefined) return options.tls;
    try {
      return { ...options.tls, ...options.reloadTls() };
    } catch (error) {
      log(
        'warn',
        `discovery: cannot read the certificates again, using those read at start: ${(error as Error).message}`,
      );
      return options.tls;
    }
  };
  const newChannel = () =>
    new Client(options.address, createTls13ChannelCredentials(currentTls(), identity.verify), {
      ...identity.channelOptions,
      // The channel's own reconnect backoff must not outlast ours, or a restarted server is noticed late.
      'grpc.initial_reconnect_backoff_ms': backoff.initialMs,
      'grpc.max_reconnect_backoff_ms': backoff.maxMs,
      'grpc.max_receive_message_length': -1,
      // Notice a silently dead controller connection, so reconnecting starts.
      'grpc.keepalive_time_ms': 30_000,
      'grpc.keepalive_timeout_ms': 10_000,
    });
  let client = newChannel();

  // What the proxy serves: the resources of the last applied config.
  let applied = new Map<string, ReceivedResource>();
  // The config assembled from `applied`: a delta patches it instead of reassembling and sorting everything.
  let appliedConfig: FleetConfig | undefined;
  let appliedVersion: string | undefined;
  let appliedListenerErrors: { listener: string; message: string }[] = [];
  let appliedRejected: RejectedResource[] = [];
  let lastError: string | undefined;
  let connected = false;
  let stopped = false;
  let current: Stream | undefined;
  // After a Nack (and on every new stream) deltas build on a state we never applied: wait for a full update.
  let awaitingFull = true;
  let failures = 0;
  let attempts = 0;
  let retryTimer: NodeJS.Timeout | undefined;
  // Updates are handled one at a time, across streams too, so apply never runs concurrently.
  let queue: Promise<void> = Promise.resolve();

  async function connect(): Promise<void> {
    retryTimer = undefined;
    if (stopped) return;
    // reconnectNow can start an attempt while another awaits its token or channel: only the newest goes on.
    const attempt = ++attempts;
    const metadata = new Metadata();
    if (options.token !== undefined) {
      let token: string;
      try {
        token = (await options.token()).trim();
      } catch (error) {
        if (stopped || attempt !== attempts) return;
        lastError = `cannot read the discovery token: ${(error as Error).message}`;
        log('warn', `discovery: ${lastError}`);
        scheduleReconnect();
        return;
      }
      if (stopped || attempt !== attempts) return;
      metadata.set('authorization', `Bearer ${token}`);
    }
    // A connection attempt can hang (a SYN to an endpoint that just went away, a handshake never answered):
    // give it a bound, then start over on a new channel rather than wait on it.
    const channel = client;
    const unreachable = await channelReady(channel, connectTimeoutMs);
    if (stopped || attempt !== attempts) return;
    if (unreachable !== undefined) {
      lastError = `cannot reach ${options.address}: ${unreachable}`;
      log('warn', `discovery: ${lastError}`);
      if (channel === client) {
        client.close();
        client = newChannel();
      }
      scheduleReconnect();
      return;
    }
    // One stream at a time: a stream left open would hold this node's place at the server (ALREADY_EXISTS).
    const previous = current;
    current = undefined;
    previous?.cancel();
    const call: Stream = client.makeBidiStreamRequest(
      method.path,
      method.requestSerialize,
      method.responseDeserialize,
      metadata,
    );
    current = call;
    awaitingFull = true;
    let received = false;
    call.on('data', (message: ServerMessage) => {
      if (call !== current) return;
      trace('proxy-received', message.version);
      if (!received) {
        received = true;
        connected = true;
        failures = 0;
        log(
          'info',
          `discovery: connected to ${options.address} as node '${options.node}' of fleet '${options.fleet}'`,
        );
      }
      queue = queue
        .then(() => onUpdate(call, message))
        .catch((error: unknown) =>
          log('error', `discovery: handling version ${message.version} failed: ${String(error)}`),
        );
    });
    call.on('error', () => {}); // the outcome arrives as 'status'
    call.on('status', (outcome: StatusObject) => onClosed(call, outcome));
    call.write({ hello: { node: options.node, fleet: options.fleet, appliedVersion: appliedVersion ?? '' } });
  }

  function onClosed(call: Stream, outcome: StatusObject): void {
    if (call !== current) return;
    current = undefined;
    connected = false;
    if (stopped) return;
    lastError = `discovery stream closed: ${status[outcome.code] ?? outcome.code}: ${outcome.details}`;
    log(
      outcome.code === status.UNAUTHENTICATED || outcome.code === status.PERMISSION_DENIED ? 'error' : 'warn',
      `discovery: ${lastError}`,
    );
    // A channel that failed to connect answers later calls with its last error until its own backoff allows a
    // new attempt, which can miss a server back behind the same Service address: each retry gets a new channel.
    if (outcome.code === status.UNAVAILABLE) {
      client.close();
      client = newChannel();
    }
    scheduleReconnect();
  }

  function scheduleReconnect(): void {
    if (stopped || retryTimer !== undefined) return;
    const delay = reconnectDelayMs(failures++, backoff);
    retryTimer = setTimeout(() => void connect(), delay);
  }

  function reply(call: Stream, message: ClientMessage): void {
    if (call === current && !stopped) call.write(message);
  }

  async function onUpdate(call: Stream, message: ServerMessage): Promise<void> {
    if (stopped || call !== current) return;
    if (!message.full && awaitingFull) {
      log('debug', `discovery: ignoring delta ${message.version}: waiting for a full update`);
      return;
    }
    const reject = (error: string): void => {
      lastError = `version ${message.version} rejected: ${error}`;
      awaitingFull = true;
      log('warn', `discovery: ${lastError}`);
      reply(call, { nack: { version: message.version, nonce: message.nonce, error } });
    };
    if (message.schemaVersion !== FLEET_CONFIG_SCHEMA_VERSION) {
      reject(
        `fleet config schema version ${message.schemaVersion} is not supported (this proxy: ${FLEET_CONFIG_SCHEMA_VERSION})`,
      );
      return;
    }
    const candidate = message.full ? new Map<string, ReceivedResource>() : new Map(applied);
    const received: ReceivedResource[] = [];
    // A body that does not parse is refused alone, as the proxy refuses a resource that fails validation: the
    // last good version (if any) stays, everything else of the update applies.
    const unparsed: RejectedResource[] = [];
    for (const resource of message.resources) {
      const key = resourceKey(resource.type, resource.name);
      try {
        const parsed = parseResource(resource.type, resource.name, resource.body);
        candidate.set(key, parsed);
        received.push(parsed);
      } catch (error) {
        unparsed.push({ type: resource.type, name: resource.name, error: (error as Error).message });
        const lastGood = applied.get(key);
        if (lastGood === undefined) candidate.delete(key);
        else {
          candidate.set(key, lastGood);
          received.push(lastGood);
        }
      }
    }
    for (const key of message.removed) candidate.delete(resourceKey(key.type, key.name));
    // A delta names each resource once (a repeat would make the patch and the candidate disagree): else assemble.
    const config =
      message.full || appliedConfig === undefined || !uniqueKeys(message)
        ? assembleFleetConfig(options.fleet, candidate.values())
        : patchFleetConfig(appliedConfig, received, message.removed);
    trace('proxy-assembled', message.version);

    let outcome: ApplyOutcome;
    if (message.full && appliedVersion !== undefined && sameResources(candidate, applied)) {
      // A resync after reconnecting that brings nothing new: keep serving, don't rebuild.
      outcome = { ok: true, listenerErrors: appliedListenerErrors, rejected: appliedRejected };
    } else {
      try {
        outcome = await options.apply(config, message.version);
      } catch (error) {
        outcome = { ok: false, error: (error as Error).message };
      }
    }
    if (!outcome.ok) {
      reject(outcome.error);
      return;
    }
    trace('proxy-applied', message.version);
    const rejected = [...unparsed, ...(outcome.rejected ?? [])];
    applied = candidate;
    appliedConfig = config;
    appliedVersion = message.version;
    appliedListenerErrors = outcome.listenerErrors;
    appliedRejected = rejected;
    // Applied, rejected resources aside: the state is known, so deltas keep building on it.
    awaitingFull = false;
    lastError =
      rejected.length === 0
        ? undefined
        : `version ${message.version}: rejected ${rejected.map((r) => `${r.type} ${r.name}: ${r.error}`).join('; ')}`;
    if (lastError !== undefined) log('warn', `discovery: ${lastError}`);
    const refused = new Set(rejected.filter((r) => r.type === 'gateways').map((r) => r.name));
    reply(call, {
      ack: {
        version: message.version,
        nonce: message.nonce,
        listenerErrors: outcome.listenerErrors,
        appliedGateways: config.gateways
          .filter((g) => !refused.has(g.name))
          .map((g) => ({ name: g.name, generation: g.generation })),
        rejectedResources: rejected,
      },
    });
  }

  void connect();

  return {
    async stop() {
      stopped = true;
      if (retryTimer !== undefined) clearTimeout(retryTimer);
      const call = current;
      current = undefined;
      connected = false;
      call?.cancel();
      await queue;
      client.close();
    },
    reconnectNow() {
      // A stream already open (on a ready channel) is awaiting its first update: let it finish.
      if (stopped || connected || current !== undefined) return;
      if (retryTimer !== undefined) clearTimeout(retryTimer);
      retryTimer = undefined;
      // The old channel may itself be backing off; a new one dials at once.
      client.close();
      client = newChannel();
      failures = 0;
      log('info', `discovery: reconnecting to ${options.address} now`);
      void connect();
    },
    status() {
      return {
        connected,
        ...(appliedVersion !== undefined ? { appliedVersion } : {}),
        ...(lastError !== undefined ? { lastError } : {}),
      };
    },
  };
}

/**
 * How the server certificate is checked: against `serverName`, else the host of `address`. An IP address is
 * checked against the certificate's IP names but not sent as TLS SNI, which RFC 6066 forbids (Node warns).
 */
function serverIdentity(
  address: string,
  serverName: string | undefined,
): {
  channelOptions: Record<string, string>;
  verify?: { checkServerIdentity: (host: string, cert: PeerCertificate) => Error | undefined };
} {
  const name = serverName ?? hostOf(address);
  if (isIP(name) === 0) {
    return serverName === undefined
      ? { channelOptions: {} }
      : { channelOptions: { 'grpc.ssl_target_name_override': name, 'grpc.default_authority': name } };
  }
  return {
    channelOptions: { 'grpc.ssl_target_name_override': DISCOVERY_SERVER_NAME },
    verify: { checkServerIdentity: (_sni, cert) => checkServerIdentity(name, cert) },
  };
}

function hostOf(address: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(address);
  if (bracketed) return bracketed[1]!;
  const colon = address.lastIndexOf(':');
  return colon > 0 && address.indexOf(':') === colon ? address.slice(0, colon) : address;
}

function uniqueKeys(message: ServerMessage): boolean {
  const keys = new Set<string>();
  for (const r of [...message.resources, ...message.removed]) keys.add(resourceKey(r.type, r.name));
  return keys.size === message.resources.length + message.removed.length;
}

function sameResources(a: Map<string, ReceivedResource>, b: Map<string, ReceivedResource>): boolean {
  if (a.size !== b.size) return false;
  for (const [key, resource] of a) if (b.get(key)?.json !== resource.json) return false;
  return true;
}

/**
 * Resolves undefined once the channel is ready, or why not: a failed attempt (refused, handshake rejected) at
 * once, so the retry gets a new channel with certificates read again; a hanging one at the deadline.
 */
function channelReady(client: Client, timeoutMs: number): Promise<string | undefined> {
  const channel = client.getChannel();
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve) => {
    const check = (): void => {
      const state = channel.getConnectivityState(true);
      if (state === connectivityState.READY) resolve(undefined);
      else if (state === connectivityState.TRANSIENT_FAILURE) resolve('the connection attempt failed');
      else if (state === connectivityState.SHUTDOWN) resolve('the channel was closed');
      else
        channel.watchConnectivityState(state, deadline, (error) => {
          if (error === undefined) check();
          else resolve(`no connection within ${timeoutMs} ms`);
        });
    };
    check();
  });
}

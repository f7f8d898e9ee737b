// The proxy's side of discovery: keeps one stream to the server, turns full and delta updates into whole
// FleetConfigs for `apply` (client-update.ts), and answers Ack or Nack. While disconnected the proxy keeps
// serving what it applied.
import { type Client, type ClientDuplexStream, Metadata, type StatusObject, status } from '@grpc/grpc-js';
import { discardingLogger, type Logger } from '../platform/log-line.js';
import type { StageTrace } from '../trace/propagation-trace.js';
import { type Backoff, reconnectDelayMs } from './backoff.js';
import { channelReady } from './channel-ready.js';
import { type ChannelSource, type ClientTls, channelSource, sameTls } from './client-channel.js';
import { type AppliedState, type ApplyConfig, applyUpdate, NOTHING_APPLIED } from './client-update.js';
import { type ClientMessage, type ServerMessage, streamMethod } from './protocol.js';

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
   * The CA and client certificate as the files hold them now: read for each new channel and every
   * `tlsRefreshMs`, so renewed certificates are picked up (an open stream moves to a connection with the new
   * ones); when it throws, the last certificates read are kept (`tls` at first).
   */
  reloadTls?: () => { caPem: string; certPem?: string; keyPem?: string };
  /** How often `reloadTls` is checked for new certificates while connected. Default 10 s. */
  tlsRefreshMs?: number;
  /**
   * Applies a whole config; resolve `{ ok: false }` (or throw) to reject it. Never called concurrently. `change`
   * (after a delta) says how the config came from the one applied last.
   */
  apply: ApplyConfig;
  backoff?: Backoff;
  /** How long one connection attempt may take before it is abandoned. Default 10 s. */
  connectTimeoutMs?: number;
  log?: Logger;
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
// Far inside the server's grace for a renewed certificate (minutes), and three small reads each time.
const DEFAULT_TLS_REFRESH_MS = 10_000;

type Stream = ClientDuplexStream<ClientMessage, ServerMessage>;

/** One client's connection state; the functions below share it. */
interface Session {
  options: DiscoveryClientOptions;
  log: Logger;
  backoff: Backoff;
  channels: ChannelSource;
  method: ReturnType<typeof streamMethod>;
  client: Client;
  /** The certificates `client` was opened with. */
  clientTls: ClientTls;
  /** Channels replaced while their stream still served: closed once the stream has moved. */
  retired: Client[];
  tlsTimer?: NodeJS.Timeout;
  applied: AppliedState;
  lastError?: string;
  connected: boolean;
  stopped: boolean;
  current?: Stream;
  // After a Nack (and on every new stream) deltas build on a state we never applied: wait for a full update.
  awaitingFull: boolean;
  failures: number;
  attempts: number;
  retryTimer?: NodeJS.Timeout;
  // Updates are handled one at a time, across streams too, so apply never runs concurrently.
  queue: Promise<void>;
}

export function startDiscoveryClient(options: DiscoveryClientOptions): DiscoveryClient {
  const log: Logger = options.log ?? discardingLogger;
  const backoff = options.backoff ?? DEFAULT_BACKOFF;
  const channels = channelSource({ ...options, backoff, log });
  const clientTls = channels.currentTls();
  const s: Session = {
    options,
    log,
    backoff,
    channels,
    method: streamMethod(),
    client: channels.open(clientTls),
    clientTls,
    retired: [],
    applied: NOTHING_APPLIED,
    connected: false,
    stopped: false,
    awaitingFull: true,
    failures: 0,
    attempts: 0,
    queue: Promise.resolve(),
  };
  void connect(s);
  if (options.reloadTls !== undefined) {
    s.tlsTimer = setInterval(() => followCertificateFiles(s), options.tlsRefreshMs ?? DEFAULT_TLS_REFRESH_MS);
    s.tlsTimer.unref();
  }
  return {
    async stop() {
      s.stopped = true;
      if (s.retryTimer !== undefined) clearTimeout(s.retryTimer);
      clearInterval(s.tlsTimer);
      const call = s.current;
      s.current = undefined;
      s.connected = false;
      call?.cancel();
      await s.queue;
      s.client.close();
      for (const retired of s.retired.splice(0)) retired.close();
    },
    reconnectNow() {
      // A stream already open (on a ready channel) is awaiting its first update: let it finish.
      if (s.stopped || s.connected || s.current !== undefined) return;
      if (s.retryTimer !== undefined) clearTimeout(s.retryTimer);
      s.retryTimer = undefined;
      // The old channel may itself be backing off; a new one dials at once.
      renewChannel(s);
      s.failures = 0;
      log.info(`discovery: reconnecting to ${options.address} now`);
      void connect(s);
    },
    status() {
      return {
        connected: s.connected,
        ...(s.applied.version !== undefined ? { appliedVersion: s.applied.version } : {}),
        ...(s.lastError !== undefined ? { lastError: s.lastError } : {}),
      };
    },
  };
}

async function connect(s: Session): Promise<void> {
  s.retryTimer = undefined;
  if (s.stopped) return;
  // reconnectNow can start an attempt while another awaits its token or channel: only the newest goes on.
  const attempt = ++s.attempts;
  const superseded = () => s.stopped || attempt !== s.attempts;
  const metadata = await streamMetadata(s);
  if (superseded()) return;
  if (typeof metadata === 'string') {
    s.lastError = metadata;
    s.log.warn(`discovery: ${s.lastError}`);
    return scheduleReconnect(s);
  }
  // Every attempt uses the certificates the files hold now (a refused one may have been renewed meanwhile).
  const tls = s.channels.currentTls();
  if (!sameTls(tls, s.clientTls)) renewChannel(s, tls);
  // A connection attempt can hang: give it a bound, then start over on a new channel rather than wait on it.
  const channel = s.client;
  const unreachable = await channelReady(channel, s.options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS);
  if (superseded()) return;
  if (unreachable !== undefined) {
    s.lastError = `cannot reach ${s.options.address}: ${unreachable}`;
    s.log.warn(`discovery: ${s.lastError}`);
    if (channel === s.client) renewChannel(s);
    return scheduleReconnect(s);
  }
  openStream(s, metadata);
}

/** The stream's metadata: in token mode the token, read anew; why not when it cannot be read. */
async function streamMetadata(s: Session): Promise<Metadata | string> {
  const metadata = new Metadata();
  if (s.options.token === undefined) return metadata;
  try {
    metadata.set('authorization', `Bearer ${(await s.options.token()).trim()}`);
    return metadata;
  } catch (error) {
    return `cannot read the discovery token: ${(error as Error).message}`;
  }
}

function openStream(s: Session, metadata: Metadata): void {
  // One stream at a time: a stream left open would hold this node's place at the server (ALREADY_EXISTS).
  const previous = s.current;
  s.current = undefined;
  previous?.cancel();
  for (const retired of s.retired.splice(0)) retired.close();
  const { method } = s;
  const call: Stream = s.client.makeBidiStreamRequest(
    method.path,
    method.requestSerialize,
    method.responseDeserialize,
    metadata,
  );
  s.current = call;
  s.awaitingFull = true;
  let received = false;
  call.on('data', (message: ServerMessage) => {
    if (call !== s.current) return;
    s.options.trace?.('proxy-received', message.version);
    if (!received) {
      received = true;
      s.connected = true;
      s.failures = 0;
      const { address, node, fleet } = s.options;
      s.log.info(`discovery: connected to ${address} as node '${node}' of fleet '${fleet}'`);
    }
    s.queue = s.queue
      .then(() => onUpdate(s, call, message))
      .catch((error: unknown) =>
        s.log.error(`discovery: handling version ${message.version} failed: ${String(error)}`),
      );
  });
  call.on('error', () => {}); // the outcome arrives as 'status'
  call.on('status', (outcome: StatusObject) => onClosed(s, call, outcome));
  const { node, fleet } = s.options;
  call.write({ hello: { node, fleet, appliedVersion: s.applied.version ?? '' } });
}

function onClosed(s: Session, call: Stream, outcome: StatusObject): void {
  if (call !== s.current) return;
  s.current = undefined;
  s.connected = false;
  if (s.stopped) return;
  s.lastError = `discovery stream closed: ${status[outcome.code] ?? outcome.code}: ${outcome.details}`;
  const refused = outcome.code === status.UNAUTHENTICATED || outcome.code === status.PERMISSION_DENIED;
  s.log[refused ? 'error' : 'warn'](`discovery: ${s.lastError}`);
  // A channel that failed to connect answers later calls with its last error until its own backoff allows a
  // new attempt, which can miss a server back behind the same Service address: each retry gets a new channel.
  if (outcome.code === status.UNAVAILABLE) renewChannel(s);
  scheduleReconnect(s);
}

function renewChannel(s: Session, tls: ClientTls = s.channels.currentTls()): void {
  s.client.close();
  s.client = s.channels.open(tls);
  s.clientTls = tls;
}

/**
 * New certificate files (a renewal): an open stream moves to a connection made with them — the new one is
 * connected before the old stream is cancelled, and the proxy serves its applied config throughout; without a
 * stream the next attempt uses them.
 */
function followCertificateFiles(s: Session): void {
  if (s.stopped) return;
  const tls = s.channels.currentTls();
  if (sameTls(tls, s.clientTls)) return;
  if (s.current === undefined) {
    renewChannel(s, tls);
    return;
  }
  s.log.info('discovery: the certificate files changed: reconnecting with the new certificate');
  s.retired.push(s.client);
  s.client = s.channels.open(tls);
  s.clientTls = tls;
  if (s.retryTimer !== undefined) clearTimeout(s.retryTimer);
  void connect(s);
}

function scheduleReconnect(s: Session): void {
  if (s.stopped || s.retryTimer !== undefined) return;
  const delay = reconnectDelayMs(s.failures++, s.backoff);
  s.retryTimer = setTimeout(() => void connect(s), delay);
}

function reply(s: Session, call: Stream, message: ClientMessage): void {
  if (call === s.current && !s.stopped) call.write(message);
}

async function onUpdate(s: Session, call: Stream, message: ServerMessage): Promise<void> {
  if (s.stopped || call !== s.current) return;
  if (!message.full && s.awaitingFull) {
    s.log.debug(`discovery: ignoring delta ${message.version}: waiting for a full update`);
    return;
  }
  const result = await applyUpdate(s.options.fleet, s.applied, message, s.options.apply, s.options.trace);
  if (!result.ok) {
    s.lastError = `version ${message.version} rejected: ${result.error}`;
    s.awaitingFull = true;
    s.log.warn(`discovery: ${s.lastError}`);
    reply(s, call, { nack: { version: message.version, nonce: message.nonce, error: result.error } });
    return;
  }
  s.applied = result.applied;
  // Applied, rejected resources aside: the state is known, so deltas keep building on it.
  s.awaitingFull = false;
  const { rejected } = result;
  s.lastError =
    rejected.length === 0
      ? undefined
      : `version ${message.version}: rejected ${rejected.map((r) => `${r.type} ${r.name}: ${r.error}`).join('; ')}`;
  if (s.lastError !== undefined) s.log.warn(`discovery: ${s.lastError}`);
  reply(s, call, { ack: result.ack });
}

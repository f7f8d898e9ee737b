// A TCP or TLS listener's server. TCP: each connection goes to its route's backend as it is accepted. TLS: the
// ClientHello is read (bounded in size and time) for its server name, which picks the certificate entry of the
// port: a passthrough entry relays the connection, ClientHello included, undecrypted to the backend (which ends
// TLS itself); a terminate entry ends TLS here with its certificate and relays the plaintext. A name no entry
// serves, or a route without a usable backend, closes the connection (no TLS alert).
import { connect, createServer, type Server, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { type SecureContext, TLSSocket } from 'node:tls';
import type { Listener } from '../../ir/fleet-config.js';
import type { Logger } from '../../platform/log-line.js';
import { type CertificateTable, selectCertificate } from '../downstream/tls.js';
import type { Layer4Limits, ProxyLimits } from '../options.js';
import type { Balancing } from '../routing/resolve.js';
import type { Snapshot } from '../routing/snapshot.js';
import type { AccessLog, ResponseFlag } from '../telemetry/access-log.js';
import type { ProxyMetrics } from '../telemetry/metrics.js';
import type { Tracing } from '../telemetry/tracing.js';
import { connectBackendTls } from '../upstream/backend-tls.js';
import { readClientHello } from './client-hello.js';
import { type Destination, layer4Destination, tlsChoiceFor } from './destination.js';
import { directReads, relay } from './relay.js';
import { endpointText, recordSession } from './session-record.js';

/** What a layer-4 listener reads of the proxy (its runtime, given from above). */
export interface Layer4Runtime extends Balancing {
  readonly snapshot: Snapshot | undefined;
  readonly options: Balancing['options'] & {
    readonly limits: ProxyLimits;
    readonly layer4: Layer4Limits;
    readonly upstreamConnectTimeoutMs: number;
    readonly log: Logger;
  };
  readonly metrics: ProxyMetrics;
  readonly accessLog: AccessLog | undefined;
  readonly tracing: Tracing | undefined;
}

/** A layer-4 listener as the proxy's listener table holds it (the HTTP servers' shape, where it applies). */
export interface Layer4Server {
  readonly server: { readonly listening: boolean };
  /** Stops accepting (new flows, for UDP); `done` runs once every connection or flow has ended. */
  close(done?: () => void): void;
  /** Nothing to do: a layer-4 connection is never idle between requests. */
  closeIdleConnections(): void;
  /** Cuts every connection or flow. */
  closeAllConnections(): void;
  /** Binds; resolves with the address and port bound. */
  listen(address: string, port: number, reusePort: boolean): Promise<{ address: string; port: number }>;
}

export interface Connection {
  startMs: number;
  started: number;
  listener: string;
  protocol: 'TCP' | 'TLS';
  serverName: string | undefined;
  client: Socket;
  /** Bytes read from the client before `client` had them (the native relay's, on a hand-over). */
  bytesBefore?: number;
  /** Set once its end was recorded: a connection is logged and counted once. */
  recorded: boolean;
}

/** The connection's end, told once to the access log and the metrics (bytes each way, duration, SNI, backend). */
export function logConnection(
  rt: Layer4Runtime,
  c: Connection,
  d: { routeName: string; upstream?: string; flag?: ResponseFlag },
): void {
  if (c.recorded) return;
  c.recorded = true;
  recordSession(rt, {
    startMs: c.startMs,
    started: c.started,
    listener: c.listener,
    protocol: c.protocol,
    serverName: c.serverName,
    clientAddress: c.client.remoteAddress,
    bytesReceived: c.client.bytesRead + (c.bytesBefore ?? 0),
    bytesSent: c.client.bytesWritten,
    routeName: d.routeName,
    upstream: d.upstream,
    flag: d.flag,
  });
}

/** Closes a connection whose ClientHello was malformed, too large, late, or whose TLS handshake failed. */
export function drop(rt: Layer4Runtime, c: Connection, flag: ResponseFlag, reason: string): void {
  rt.options.log.debug(`listener ${c.listener}: ${reason}`);
  c.client.destroy();
  logConnection(rt, c, { routeName: '-', flag });
}

/**
 * Closes a connection nothing serves, without a TLS alert: the Gateway API conformance suite takes only a reset or
 * a plain close as a refusal (an `unrecognized_name` alert reads to it as a failed handshake to retry).
 */
function refuse(rt: Layer4Runtime, c: Connection, d: Destination & { ok: false }): void {
  rt.options.log.debug(`listener ${c.listener}: connection refused: ${d.reason}`);
  c.client.destroy();
  logConnection(rt, c, { routeName: d.routeName, flag: d.flag });
}

/**
 * Connects to the destination and relays `plain` (the client side) with it. `first`: bytes already read to send
 * ahead (a passed-through ClientHello); `terminated`: the proxy ended the client's TLS, so the cluster's
 * BackendTLSPolicy, if any, applies.
 */
function forward(
  rt: Layer4Runtime,
  c: Connection,
  plain: Duplex,
  d: Destination,
  options: { first?: Buffer; terminated: boolean },
): void {
  if (!d.ok) {
    refuse(rt, c, d);
    return;
  }
  const { endpoint, cluster, routeName } = d;
  const upstreamHost = endpointText(endpoint.address, endpoint.port);
  // The client's own socket (TCP, TLS passed through) takes the upstream's reads straight from net's buffer; a
  // TLS layer ended here, or one begun to the backend, keeps the stream path.
  const upstream =
    options.terminated && cluster.tls !== undefined
      ? connectBackendTls(endpoint.address, endpoint.port, cluster.tls, [])
      : connect({
          host: endpoint.address,
          port: endpoint.port,
          allowHalfOpen: true,
          noDelay: true,
          ...(options.terminated ? {} : { onread: directReads(plain) }),
        });
  upstream.setTimeout(rt.options.upstreamConnectTimeoutMs, () =>
    upstream.destroy(new Error('connect timeout')),
  );
  upstream.once('connect', () => upstream.setTimeout(0));
  if (options.first !== undefined) upstream.write(options.first);
  const active = rt.activeByEndpoint;
  active.set(upstreamHost, (active.get(upstreamHost) ?? 0) + 1);
  relay(plain, upstream, (end) => {
    const left = (active.get(upstreamHost) ?? 1) - 1;
    if (left === 0) active.delete(upstreamHost);
    else active.set(upstreamHost, left);
    let flag: ResponseFlag | undefined;
    if (end.failed === 'upstream') {
      flag = upstream.connecting || upstream.bytesRead === 0 ? 'upstream_connect_failure' : 'upstream_reset';
      rt.metrics.upstreamError(cluster.name, flag === 'upstream_connect_failure' ? 'connect' : 'reset');
    } else if (end.failed === 'client') flag = 'client_disconnect';
    logConnection(rt, c, { routeName, upstream: upstreamHost, ...(flag === undefined ? {} : { flag }) });
  });
}

/** What a TLS listener does with a connection, from its ClientHello's server name. */
export type TlsDecision =
  | { kind: 'refuse'; reason: string }
  | { kind: 'passthrough' }
  | { kind: 'terminate'; context: SecureContext };

/** The listener's certificate entry for `serverName` decides: passed through, ended here, or refused. */
export function tlsDecision(
  listener: Listener,
  table: CertificateTable | undefined,
  serverName: string | undefined,
): TlsDecision {
  const choice = listener.tls === undefined ? undefined : tlsChoiceFor(listener.tls, serverName);
  if (choice === undefined || (choice.passthrough === undefined && table === undefined))
    return { kind: 'refuse', reason: `no listener serves server name '${serverName ?? ''}'` };
  if (choice.passthrough === true) return { kind: 'passthrough' };
  return { kind: 'terminate', context: selectCertificate(table!, serverName ?? '') };
}

/**
 * Ends TLS here on `c.client`, whose first bytes (`hello`, already read) go back to it for the TLS layer to read
 * first, then relays the plaintext. `deadline` (the handshake's) is cleared once the handshake ends either way.
 */
export function terminateTls(
  rt: Layer4Runtime,
  c: Connection,
  hello: Buffer,
  context: SecureContext,
  deadline: NodeJS.Timeout,
  onRelayed: () => void,
): void {
  c.client.unshift(hello);
  const secure = new TLSSocket(c.client, { isServer: true, secureContext: context });
  secure.once('secure', () => {
    clearTimeout(deadline);
    onRelayed();
    forward(rt, c, secure, layer4Destination(rt, rt.snapshot, c.listener, c.serverName), {
      terminated: true,
    });
  });
  secure.once('error', (error) => {
    clearTimeout(deadline);
    drop(rt, c, 'invalid_request', `TLS handshake failed: ${error.message}`);
  });
}

/** Reads the ClientHello within the limits, then passes the connection through or ends TLS here. */
function acceptTls(
  rt: Layer4Runtime,
  c: Connection,
  listener: () => Listener,
  certificates: () => CertificateTable | undefined,
): void {
  const own = listener().limits;
  const socket = c.client;
  let buffered: Buffer = Buffer.alloc(0);
  /** From here the relay records the connection's end. */
  let relayed = false;
  const deadline = setTimeout(
    () => drop(rt, c, 'request_timeout', 'no ClientHello or TLS handshake in time'),
    own?.tlsHandshakeTimeoutMs ?? rt.options.limits.tlsHandshakeTimeoutMs,
  );
  const maxHelloBytes = own?.clientHelloMaxBytes ?? rt.options.layer4.clientHelloMaxBytes;
  const onData = (chunk: Buffer) => {
    buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
    const hello = readClientHello(buffered, maxHelloBytes);
    if (hello.state === 'incomplete') return;
    socket.off('data', onData);
    socket.pause();
    if (hello.state === 'invalid') {
      clearTimeout(deadline);
      drop(rt, c, 'invalid_request', hello.reason);
      return;
    }
    c.serverName = hello.serverName;
    const decision = tlsDecision(listener(), certificates(), hello.serverName);
    if (decision.kind === 'refuse') {
      clearTimeout(deadline);
      refuse(rt, c, { ok: false, routeName: '-', flag: 'no_route', reason: decision.reason });
    } else if (decision.kind === 'passthrough') {
      clearTimeout(deadline);
      const d = layer4Destination(rt, rt.snapshot, c.listener, hello.serverName);
      relayed = true;
      forward(rt, c, socket, d, { first: buffered, terminated: false });
      socket.resume();
    } else {
      terminateTls(rt, c, buffered, decision.context, deadline, () => {
        relayed = true;
      });
    }
  };
  socket.on('data', onData);
  socket.once('close', () => {
    clearTimeout(deadline);
    // Gone before its ClientHello or handshake was done: still one line and one count.
    if (!relayed) logConnection(rt, c, { routeName: '-', flag: 'client_disconnect' });
  });
}

/**
 * A TCP or TLS listener's server; `listener` and `certificates` are read per connection (the current config's,
 * so a config change applies to new connections and leaves open ones as they are).
 */
export function createStreamListener(
  rt: Layer4Runtime,
  name: string,
  listener: () => Listener,
  certificates: () => CertificateTable | undefined,
): Layer4Server {
  const connections = new Set<Socket>();
  let closing: (() => void) | undefined;
  const settle = () => {
    if (closing !== undefined && connections.size === 0) {
      const done = closing;
      closing = undefined;
      done();
    }
  };
  const server: Server = createServer({ allowHalfOpen: true, noDelay: true }, (socket) => {
    const max = listener().limits?.maxConnections ?? rt.options.limits.maxConnections;
    if (max > 0 && connections.size >= max) {
      rt.metrics.connectionRefused(name);
      socket.destroy();
      return;
    }
    connections.add(socket);
    rt.metrics.connectionOpened(name);
    socket.once('close', () => {
      connections.delete(socket);
      rt.metrics.connectionClosed(name);
      settle();
    });
    socket.on('error', () => socket.destroy());
    const protocol = listener().protocol === 'TLS' ? 'TLS' : 'TCP';
    const c: Connection = {
      startMs: Date.now(),
      started: performance.now(),
      listener: name,
      protocol,
      serverName: undefined,
      client: socket,
      recorded: false,
    };
    if (protocol === 'TLS') acceptTls(rt, c, listener, certificates);
    else forward(rt, c, socket, layer4Destination(rt, rt.snapshot, name, undefined), { terminated: false });
  });
  return {
    server,
    close(done) {
      let closed = false;
      let drained = false;
      const finish = () => {
        if (closed && drained) done?.();
      };
      server.close(() => {
        closed = true;
        finish();
      });
      closing = () => {
        drained = true;
        finish();
      };
      settle();
    },
    closeIdleConnections() {},
    closeAllConnections() {
      for (const socket of connections) socket.destroy();
    },
    listen(address, port, reusePort) {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        const options = { host: address, port, ...(reusePort ? { reusePort: true, exclusive: true } : {}) };
        server.listen(options, () => {
          server.off('error', reject);
          server.on('error', (error) => rt.options.log.error(`listener ${name}: ${error.message}`));
          const bound = server.address();
          if (bound === null || typeof bound === 'string') reject(new Error('no address bound'));
          else resolve({ address: bound.address, port: bound.port });
        });
      });
    },
  };
}

// A TCP or TLS listener served by the native relay (native-relay.ts): the relay's thread accepts, connects and
// moves the bytes; this file decides, per connection, what stream-listener.ts decides for Node's sockets — the
// connection limit, the route and backend, the ClientHello's server name within its size and time limits — and
// records the end (metrics, access log). A TLS connection the proxy ends itself is handed over to Node (its
// socket as a descriptor) and served from there as stream-listener.ts serves it.
import cluster from 'node:cluster';
import { lookup } from 'node:dns';
import { isIP, Socket } from 'node:net';
import type { SecureContext } from 'node:tls';
import type { Listener } from '../../ir/fleet-config.js';
import type { CertificateTable } from '../downstream/tls.js';
import type { ResponseFlag } from '../telemetry/access-log.js';
import { readClientHello } from './client-hello.js';
import { type Destination, layer4Destination } from './destination.js';
import type { NativeConnection, NativeEnd, NativeListener, NativeRelay } from './native-relay.js';
import { endpointText, recordSession } from './session-record.js';
import {
  type Connection,
  drop,
  type Layer4Runtime,
  type Layer4Server,
  logConnection,
  terminateTls,
  tlsDecision,
} from './stream-listener.js';

/** A connection the relay holds, as this listener follows it. */
interface Held {
  id: number;
  startMs: number;
  started: number;
  protocol: 'TCP' | 'TLS';
  clientAddress: string;
  serverName: string | undefined;
  routeName: string;
  /** The backend it went to, once forwarded: `host:port`, and its cluster. */
  upstream: string | undefined;
  cluster: string | undefined;
  /** Why this side closed it (refused, dropped), if it did. */
  flag: ResponseFlag | undefined;
  /** The ClientHello's deadline (TLS, until forwarded or handed over). */
  deadline: NodeJS.Timeout | undefined;
  /** Set when TLS is to end in Node: what to do with the socket the relay gives back. */
  handOver: ((fd: number) => void) | undefined;
}

/** The flag of a relayed connection's end, from which side failed (stream-listener's rule for Node's sockets). */
function endFlag(end: NativeEnd): ResponseFlag | undefined {
  if (end.failed === 'connect') return 'upstream_connect_failure';
  if (end.failed === 'upstream')
    return end.upstreamBytesRead === 0 ? 'upstream_connect_failure' : 'upstream_reset';
  if (end.failed === 'client') return 'client_disconnect';
  return undefined;
}

/** A listener's own state, which each connection's handlers share. */
interface ListenerState {
  rt: Layer4Runtime;
  name: string;
  listener: () => Listener;
  certificates: () => CertificateTable | undefined;
  relay: NativeRelay;
  /** Connections the relay holds, and those handed over to Node (TLS ended here). */
  held: Map<number, Held>;
  handedOver: Set<Socket>;
  /** Runs `close`'s callback once nothing is left open after it. */
  settle: () => void;
}

function ended(s: ListenerState): void {
  s.rt.metrics.connectionClosed(s.name);
  s.settle();
}

/** Closes a connection this side will not serve; its end is recorded when the relay says it closed. */
function refuse(s: ListenerState, h: Held, flag: ResponseFlag, routeName: string, reason: string): void {
  s.rt.options.log.debug(`listener ${s.name}: connection refused: ${reason}`);
  if (h.deadline !== undefined) clearTimeout(h.deadline);
  h.flag ??= flag;
  h.routeName = routeName;
  s.relay.close(h.id);
}

function forward(s: ListenerState, h: Held, d: Destination, first: Buffer | undefined): void {
  if (!d.ok) {
    refuse(s, h, d.flag, d.routeName, d.reason);
    return;
  }
  if (h.deadline !== undefined) clearTimeout(h.deadline);
  h.deadline = undefined;
  const { endpoint, cluster: backend, routeName } = d;
  h.routeName = routeName;
  h.cluster = backend.name;
  h.upstream = endpointText(endpoint.address, endpoint.port);
  const active = s.rt.activeByEndpoint;
  active.set(h.upstream, (active.get(h.upstream) ?? 0) + 1);
  const connectTo = (address: string) => {
    try {
      s.relay.forward(h.id, address, endpoint.port, first);
    } catch (error) {
      refuse(
        s,
        h,
        'upstream_connect_failure',
        routeName,
        `cannot connect to ${address}: ${(error as Error).message}`,
      );
    }
  };
  if (isIP(endpoint.address) !== 0) {
    connectTo(endpoint.address);
    return;
  }
  // A backend named by host name (standalone configs): resolved as Node's `connect` would.
  lookup(endpoint.address, (error, address) => {
    if (!s.held.has(h.id)) return;
    if (error === null) connectTo(address);
    else
      refuse(
        s,
        h,
        'upstream_connect_failure',
        routeName,
        `cannot resolve ${endpoint.address}: ${error.code}`,
      );
  });
}

/** Ends TLS in Node: the relay gave the socket back as `fd`, with `hello` read from it already. */
function handOver(
  s: ListenerState,
  h: Held,
  fd: number,
  hello: Buffer,
  context: SecureContext,
  deadlineAt: number,
): void {
  s.held.delete(h.id);
  const socket = new Socket({ fd, readable: true, writable: true, allowHalfOpen: true });
  s.handedOver.add(socket);
  socket.on('error', () => socket.destroy());
  const c: Connection = {
    startMs: h.startMs,
    started: h.started,
    listener: s.name,
    protocol: 'TLS',
    serverName: h.serverName,
    client: socket,
    bytesBefore: hello.length,
    recorded: false,
  };
  let relayed = false;
  const deadline = setTimeout(
    () => drop(s.rt, c, 'request_timeout', 'no TLS handshake in time'),
    Math.max(0, deadlineAt - performance.now()),
  );
  terminateTls(s.rt, c, hello, context, deadline, () => {
    relayed = true;
  });
  socket.once('close', () => {
    clearTimeout(deadline);
    s.handedOver.delete(socket);
    if (!relayed) logConnection(s.rt, c, { routeName: '-', flag: 'client_disconnect' });
    ended(s);
  });
}

/** A TLS connection: its first bytes until the ClientHello is whole, then passed through, ended here or refused. */
function readHello(s: ListenerState, h: Held): NativeConnection['peeked'] {
  const { rt, name } = s;
  const own = s.listener().limits;
  const maxHelloBytes = own?.clientHelloMaxBytes ?? rt.options.layer4.clientHelloMaxBytes;
  const timeoutMs = own?.tlsHandshakeTimeoutMs ?? rt.options.limits.tlsHandshakeTimeoutMs;
  const deadlineAt = performance.now() + timeoutMs;
  h.deadline = setTimeout(() => {
    h.deadline = undefined;
    refuse(s, h, 'request_timeout', '-', 'no ClientHello or TLS handshake in time');
  }, timeoutMs);
  let buffered: Buffer = Buffer.alloc(0);
  return (bytes: Buffer) => {
    buffered = buffered.length === 0 ? bytes : Buffer.concat([buffered, bytes]);
    const hello = readClientHello(buffered, maxHelloBytes);
    if (hello.state === 'incomplete') {
      s.relay.peek(h.id);
      return;
    }
    if (hello.state === 'invalid') {
      refuse(s, h, 'invalid_request', '-', hello.reason);
      return;
    }
    h.serverName = hello.serverName;
    const decision = tlsDecision(s.listener(), s.certificates(), hello.serverName);
    if (decision.kind === 'refuse') refuse(s, h, 'no_route', '-', decision.reason);
    else if (decision.kind === 'passthrough')
      forward(s, h, layer4Destination(rt, rt.snapshot, name, hello.serverName), buffered);
    else {
      if (h.deadline !== undefined) clearTimeout(h.deadline);
      h.deadline = undefined;
      h.handOver = (fd) => handOver(s, h, fd, buffered, decision.context, deadlineAt);
      s.relay.release(h.id);
    }
  };
}

/** The connection's end, told once to the metrics and the access log. */
function record(s: ListenerState, h: Held, end: NativeEnd): void {
  const { rt } = s;
  s.held.delete(h.id);
  if (h.deadline !== undefined) clearTimeout(h.deadline);
  if (h.upstream !== undefined) {
    const left = (rt.activeByEndpoint.get(h.upstream) ?? 1) - 1;
    if (left === 0) rt.activeByEndpoint.delete(h.upstream);
    else rt.activeByEndpoint.set(h.upstream, left);
  }
  const flag = h.flag ?? endFlag(end);
  const upstreamFailed = flag === 'upstream_connect_failure' || flag === 'upstream_reset';
  if (h.flag === undefined && h.cluster !== undefined && upstreamFailed)
    rt.metrics.upstreamError(h.cluster, flag === 'upstream_reset' ? 'reset' : 'connect');
  recordSession(rt, {
    startMs: h.startMs,
    started: h.started,
    listener: s.name,
    protocol: h.protocol,
    serverName: h.serverName,
    clientAddress: h.clientAddress,
    bytesReceived: end.clientBytesRead,
    bytesSent: end.clientBytesWritten,
    routeName: h.routeName,
    upstream: h.upstream,
    flag,
  });
  ended(s);
}

const REFUSED: NativeConnection = { peeked() {}, closed() {}, released() {} };

/** A connection the relay accepted: refused past the listener's limit, else routed (TCP) or read (TLS). */
function accept(s: ListenerState, id: number, clientAddress: string): NativeConnection {
  const { rt, name } = s;
  const max = s.listener().limits?.maxConnections ?? rt.options.limits.maxConnections;
  if (max > 0 && s.held.size + s.handedOver.size >= max) {
    rt.metrics.connectionRefused(name);
    s.relay.close(id);
    return REFUSED;
  }
  rt.metrics.connectionOpened(name);
  const h: Held = {
    id,
    startMs: Date.now(),
    started: performance.now(),
    protocol: s.listener().protocol === 'TLS' ? 'TLS' : 'TCP',
    clientAddress,
    serverName: undefined,
    routeName: '-',
    upstream: undefined,
    cluster: undefined,
    flag: undefined,
    deadline: undefined,
    handOver: undefined,
  };
  s.held.set(id, h);
  const peeked = h.protocol === 'TLS' ? readHello(s, h) : undefined;
  if (peeked === undefined) forward(s, h, layer4Destination(rt, rt.snapshot, name, undefined), undefined);
  return {
    peeked: (bytes) => peeked?.(bytes),
    released: (fd) => h.handOver?.(fd),
    closed: (end) => record(s, h, end),
  };
}

/** A TCP or TLS listener on the native relay; `listener` and `certificates` are read per connection. */
export function createNativeStreamListener(
  rt: Layer4Runtime,
  name: string,
  listener: () => Listener,
  certificates: () => CertificateTable | undefined,
  relay: NativeRelay,
): Layer4Server {
  let listenerId: number | undefined;
  let closing: (() => void) | undefined;
  const server = { listening: false };
  const s: ListenerState = {
    rt,
    name,
    listener,
    certificates,
    relay,
    held: new Map(),
    handedOver: new Set(),
    settle: () => {
      if (closing !== undefined && s.held.size + s.handedOver.size === 0) {
        const done = closing;
        closing = undefined;
        done();
      }
    },
  };
  let acceptFailures = 0;
  let acceptFailureToldAt = Number.NEGATIVE_INFINITY;
  const accepting: NativeListener = {
    accepted: (id, clientAddress) => accept(s, id, clientAddress),
    acceptFailed(message) {
      // Out of descriptors, the relay rests the listener 100 ms at a time: one line per 10 s says so.
      acceptFailures++;
      const now = performance.now();
      if (now - acceptFailureToldAt < 10_000) return;
      acceptFailureToldAt = now;
      rt.options.log.warn(
        `listener ${name}: accept failed ${acceptFailures} times, resting 100 ms each: ${message}`,
      );
      acceptFailures = 0;
    },
  };
  return {
    server,
    close(done) {
      if (listenerId !== undefined) relay.closeListener(listenerId);
      listenerId = undefined;
      server.listening = false;
      closing = () => done?.();
      s.settle();
    },
    closeIdleConnections() {},
    closeAllConnections() {
      for (const id of s.held.keys()) relay.close(id);
      for (const socket of s.handedOver) socket.destroy();
    },
    async listen(address, port, reusePort) {
      const host =
        isIP(address) !== 0
          ? address
          : await new Promise<string>((resolve, reject) =>
              lookup(address, (error, found) => (error === null ? resolve(found) : reject(error))),
            );
      // The workers of one proxy each bind the port (Node 20's cluster does not share a handle it did not make).
      const bound = relay.listen(
        host,
        port,
        { reusePort: reusePort || cluster.isWorker, peek: listener().protocol === 'TLS' },
        accepting,
      );
      listenerId = bound.id;
      server.listening = true;
      return { address: bound.address, port: bound.port };
    },
  };
}

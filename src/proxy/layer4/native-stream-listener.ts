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

/** A TCP or TLS listener on the native relay; `listener` and `certificates` are read per connection. */
export function createNativeStreamListener(
  rt: Layer4Runtime,
  name: string,
  listener: () => Listener,
  certificates: () => CertificateTable | undefined,
  relay: NativeRelay,
): Layer4Server {
  const held = new Map<number, Held>();
  const handedOver = new Set<Socket>();
  let listenerId: number | undefined;
  let closing: (() => void) | undefined;
  const server = { listening: false };
  let acceptFailures = 0;
  let acceptFailureToldAt = Number.NEGATIVE_INFINITY;
  const settle = () => {
    if (closing !== undefined && held.size + handedOver.size === 0) {
      const done = closing;
      closing = undefined;
      done();
    }
  };
  const ended = () => {
    rt.metrics.connectionClosed(name);
    settle();
  };

  /** Closes a connection this side will not serve; its end is recorded when the relay says it closed. */
  const refuse = (h: Held, flag: ResponseFlag, routeName: string, reason: string) => {
    rt.options.log.debug(`listener ${name}: connection refused: ${reason}`);
    if (h.deadline !== undefined) clearTimeout(h.deadline);
    h.flag ??= flag;
    h.routeName = routeName;
    relay.close(h.id);
  };

  const forward = (h: Held, d: Destination, first: Buffer | undefined) => {
    if (!d.ok) {
      refuse(h, d.flag, d.routeName, d.reason);
      return;
    }
    if (h.deadline !== undefined) clearTimeout(h.deadline);
    h.deadline = undefined;
    const { endpoint, cluster: backend, routeName } = d;
    h.routeName = routeName;
    h.cluster = backend.name;
    h.upstream = endpointText(endpoint.address, endpoint.port);
    const active = rt.activeByEndpoint;
    active.set(h.upstream, (active.get(h.upstream) ?? 0) + 1);
    const connectTo = (address: string) => {
      try {
        relay.forward(h.id, address, endpoint.port, first);
      } catch (error) {
        refuse(
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
      if (!held.has(h.id)) return;
      if (error === null) connectTo(address);
      else
        refuse(h, 'upstream_connect_failure', routeName, `cannot resolve ${endpoint.address}: ${error.code}`);
    });
  };

  /** Ends TLS in Node: the relay gave the socket back as `fd`, with `hello` read from it already. */
  const handOver = (h: Held, fd: number, hello: Buffer, context: SecureContext, deadlineAt: number) => {
    held.delete(h.id);
    const socket = new Socket({ fd, readable: true, writable: true, allowHalfOpen: true });
    handedOver.add(socket);
    socket.on('error', () => socket.destroy());
    const c: Connection = {
      startMs: h.startMs,
      started: h.started,
      listener: name,
      protocol: 'TLS',
      serverName: h.serverName,
      client: socket,
      bytesBefore: hello.length,
      recorded: false,
    };
    let relayed = false;
    const deadline = setTimeout(
      () => drop(rt, c, 'request_timeout', 'no TLS handshake in time'),
      Math.max(0, deadlineAt - performance.now()),
    );
    terminateTls(rt, c, hello, context, deadline, () => {
      relayed = true;
    });
    socket.once('close', () => {
      clearTimeout(deadline);
      handedOver.delete(socket);
      if (!relayed) logConnection(rt, c, { routeName: '-', flag: 'client_disconnect' });
      ended();
    });
  };

  /** A TLS connection: its first bytes until the ClientHello is whole, then passed through, ended here or refused. */
  const readHello = (h: Held): NativeConnection['peeked'] => {
    const own = listener().limits;
    const maxHelloBytes = own?.clientHelloMaxBytes ?? rt.options.layer4.clientHelloMaxBytes;
    const timeoutMs = own?.tlsHandshakeTimeoutMs ?? rt.options.limits.tlsHandshakeTimeoutMs;
    const deadlineAt = performance.now() + timeoutMs;
    h.deadline = setTimeout(() => {
      h.deadline = undefined;
      refuse(h, 'request_timeout', '-', 'no ClientHello or TLS handshake in time');
    }, timeoutMs);
    let buffered: Buffer = Buffer.alloc(0);
    const peeked = (bytes: Buffer) => {
      buffered = buffered.length === 0 ? bytes : Buffer.concat([buffered, bytes]);
      const hello = readClientHello(buffered, maxHelloBytes);
      if (hello.state === 'incomplete') {
        relay.peek(h.id);
        return;
      }
      if (hello.state === 'invalid') {
        refuse(h, 'invalid_request', '-', hello.reason);
        return;
      }
      h.serverName = hello.serverName;
      const decision = tlsDecision(listener(), certificates(), hello.serverName);
      if (decision.kind === 'refuse') refuse(h, 'no_route', '-', decision.reason);
      else if (decision.kind === 'passthrough')
        forward(h, layer4Destination(rt, rt.snapshot, name, hello.serverName), buffered);
      else {
        if (h.deadline !== undefined) clearTimeout(h.deadline);
        h.deadline = undefined;
        h.handOver = (fd) => handOver(h, fd, buffered, decision.context, deadlineAt);
        relay.release(h.id);
      }
    };
    return peeked;
  };

  const accepting: NativeListener = {
    accepted(id, clientAddress) {
      const max = listener().limits?.maxConnections ?? rt.options.limits.maxConnections;
      if (max > 0 && held.size + handedOver.size >= max) {
        rt.metrics.connectionRefused(name);
        relay.close(id);
        return { peeked() {}, closed() {}, released() {} };
      }
      rt.metrics.connectionOpened(name);
      const h: Held = {
        id,
        startMs: Date.now(),
        started: performance.now(),
        protocol: listener().protocol === 'TLS' ? 'TLS' : 'TCP',
        clientAddress,
        serverName: undefined,
        routeName: '-',
        upstream: undefined,
        cluster: undefined,
        flag: undefined,
        deadline: undefined,
        handOver: undefined,
      };
      held.set(id, h);
      const peeked = h.protocol === 'TLS' ? readHello(h) : undefined;
      if (peeked === undefined) forward(h, layer4Destination(rt, rt.snapshot, name, undefined), undefined);
      return {
        peeked: (bytes) => peeked?.(bytes),
        released: (fd) => h.handOver?.(fd),
        closed(end) {
          held.delete(id);
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
            listener: name,
            protocol: h.protocol,
            serverName: h.serverName,
            clientAddress: h.clientAddress,
            bytesReceived: end.clientBytesRead,
            bytesSent: end.clientBytesWritten,
            routeName: h.routeName,
            upstream: h.upstream,
            flag,
          });
          ended();
        },
      };
    },
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
      settle();
    },
    closeIdleConnections() {},
    closeAllConnections() {
      for (const id of held.keys()) relay.close(id);
      for (const socket of handedOver) socket.destroy();
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

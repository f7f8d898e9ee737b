// A UDP listener's server: each client (address and port) is a flow with its own upstream socket, so the
// backend's replies find their way back; a flow's destination is decided by its first datagram and kept while it
// lives (config changes included). A flow with no datagram either way for the idle timeout ends; the table is
// bounded, and a new client past the bound is dropped. Datagrams are relayed one for one, never reassembled.
import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import { isIPv6 } from 'node:net';
import type { Listener } from '../../ir/fleet-config.js';
import { layer4Destination } from './destination.js';
import { endpointText, recordSession } from './session-record.js';
import type { Layer4Runtime, Layer4Server } from './stream-listener.js';

export interface Flow {
  /** The flow's own socket toward the backend. */
  upstream: Socket;
  /** The backend endpoint. */
  address: string;
  port: number;
  /** `performance.now()` of the last datagram either way. */
  lastSeen: number;
  /** For its access log line: when it started (epoch ms and `performance.now()`), bytes each way, route. */
  startMs: number;
  started: number;
  bytesReceived: number;
  bytesSent: number;
  routeName: string;
}

/** The table of a listener's flows by client, with its idle sweep; `onEnd` hears of each flow that ends. */
export class FlowTable {
  readonly flows = new Map<string, Flow>();
  constructor(
    /** Set again per new flow and sweep from the listener's current limits. */
    public maxFlows: number,
    public idleMs: number,
    readonly onEnd: (client: string, flow: Flow) => void = () => {},
  ) {}

  /** Ends flows idle for the timeout; returns how many are left. */
  sweep(now: number): number {
    for (const [key, flow] of this.flows) {
      if (now - flow.lastSeen >= this.idleMs) this.end(key);
    }
    return this.flows.size;
  }

  end(key: string): void {
    const flow = this.flows.get(key);
    if (flow === undefined) return;
    this.flows.delete(key);
    flow.upstream.close();
    this.onEnd(key, flow);
  }

  endAll(): void {
    for (const key of [...this.flows.keys()]) this.end(key);
  }
}

function clientKey(r: RemoteInfo): string {
  return `${r.address}|${r.port}`;
}

/** An ended flow told to the access log and the metrics: protocol UDP, bytes each way, duration, backend. */
function recordFlow(rt: Layer4Runtime, listener: string, client: string, flow: Flow): void {
  recordSession(rt, {
    startMs: flow.startMs,
    started: flow.started,
    listener,
    protocol: 'UDP',
    serverName: undefined,
    clientAddress: client.slice(0, client.lastIndexOf('|')),
    bytesReceived: flow.bytesReceived,
    bytesSent: flow.bytesSent,
    routeName: flow.routeName,
    upstream: endpointText(flow.address, flow.port),
    flag: undefined,
  });
}

/** The listener's flow limits: its own (ir ListenerLimits), else the proxy's. */
function flowLimits(rt: Layer4Runtime, listener: Listener): { maxFlows: number; idleMs: number } {
  const own = listener.limits;
  return {
    maxFlows: own?.maxUdpFlows ?? rt.options.layer4.udpMaxFlows,
    idleMs: own?.udpFlowIdleTimeoutMs ?? rt.options.layer4.udpFlowIdleTimeoutMs,
  };
}

/** A new client's flow toward its route's backend, its replies sent back through `inbound`; undefined: no route. */
function openFlow(
  rt: Layer4Runtime,
  name: string,
  table: FlowTable,
  inbound: Socket,
  r: RemoteInfo,
): Flow | undefined {
  const d = layer4Destination(rt, rt.snapshot, name, undefined);
  if (!d.ok) {
    rt.options.log.debug(`listener ${name}: datagram from ${r.address} dropped: ${d.reason}`);
    return undefined;
  }
  const { address, port } = d.endpoint;
  const upstream = createSocket(isIPv6(address) ? 'udp6' : 'udp4');
  const now = performance.now();
  const flow: Flow = {
    upstream,
    address,
    port,
    lastSeen: now,
    startMs: Date.now(),
    started: now,
    bytesReceived: 0,
    bytesSent: 0,
    routeName: d.routeName,
  };
  const key = clientKey(r);
  upstream.on('message', (reply, from) => {
    // Only the backend's own replies go back: the flow's socket is not an open relay.
    if (from.address !== address || from.port !== port) return;
    flow.lastSeen = performance.now();
    flow.bytesSent += reply.length;
    inbound.send(reply, r.port, r.address);
  });
  upstream.on('error', (error) => {
    rt.options.log.debug(`listener ${name}: flow of ${r.address}: ${error.message}`);
    rt.metrics.upstreamError(d.cluster.name, 'reset');
    table.end(key);
  });
  upstream.on('close', () => rt.metrics.connectionClosed(name));
  rt.metrics.connectionOpened(name);
  table.flows.set(key, flow);
  return flow;
}

/**
 * A UDP listener: flows by client to the route's backend, replies sent back from the listener's socket;
 * `listener` is read for its limits as flows start and sweeps run (a config change applies without a rebind).
 */
export function createUdpListener(rt: Layer4Runtime, name: string, listener: () => Listener): Layer4Server {
  const first = flowLimits(rt, listener());
  const table = new FlowTable(first.maxFlows, first.idleMs, (client, flow) =>
    recordFlow(rt, name, client, flow),
  );
  const refresh = () => Object.assign(table, flowLimits(rt, listener()));
  let socket: Socket | undefined;
  let listening = false;
  let accepting = true;
  let closing: (() => void) | undefined;
  const sweeper = setInterval(
    () => {
      refresh();
      const left = table.sweep(performance.now());
      if (closing !== undefined && left === 0) closing();
    },
    Math.max(100, Math.min(1000, first.idleMs / 4)),
  );
  sweeper.unref();

  const open = (inbound: Socket, r: RemoteInfo): Flow | undefined => {
    if (!accepting) return undefined;
    refresh();
    if (table.flows.size >= table.maxFlows) {
      // Each datagram of a client past the bound is counted: a flood shows in the refusals.
      rt.metrics.connectionRefused(name);
      return undefined;
    }
    return openFlow(rt, name, table, inbound, r);
  };

  const onMessage = (inbound: Socket) => (msg: Buffer, r: RemoteInfo) => {
    const flow = table.flows.get(clientKey(r)) ?? open(inbound, r);
    if (flow === undefined) return;
    flow.lastSeen = performance.now();
    flow.bytesReceived += msg.length;
    flow.upstream.send(msg, flow.port, flow.address);
  };

  const shut = () => {
    clearInterval(sweeper);
    table.endAll();
    listening = false;
    const s = socket;
    socket = undefined;
    s?.close();
  };

  return {
    server: {
      get listening() {
        return listening;
      },
    },
    close(done) {
      // New clients are dropped from now on; open flows run until idle (or closeAllConnections).
      accepting = false;
      closing = () => {
        closing = undefined;
        shut();
        done?.();
      };
      if (table.flows.size === 0) closing();
    },
    closeIdleConnections() {},
    closeAllConnections() {
      const done = closing;
      closing = undefined;
      shut();
      done?.();
    },
    listen(address, port, reusePort) {
      return new Promise((resolve, reject) => {
        // SO_REUSEPORT for UDP needs Node ≥ 22.12 (workers then each own a socket on the port).
        const options = {
          type: isIPv6(address) ? ('udp6' as const) : ('udp4' as const),
          ...(reusePort ? { reusePort: true } : {}),
        };
        const s = createSocket(options);
        s.once('error', reject);
        s.on('message', onMessage(s));
        s.bind({ address, port, exclusive: reusePort }, () => {
          s.off('error', reject);
          s.on('error', (error) => rt.options.log.error(`listener ${name}: ${error.message}`));
          socket = s;
          listening = true;
          const bound = s.address();
          resolve({ address: bound.address, port: bound.port });
        });
      });
    },
  };
}

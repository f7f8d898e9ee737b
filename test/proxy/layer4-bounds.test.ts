// Layer 4 counted, bounded and drained, through real proxies with real clients on loopback: each TCP connection,
// TLS connection and UDP flow in the metrics (bytes each way, duration) and the access log; a ClientHello over
// its size limit and one that never comes closed (logged with their reason); a listener's own connection and UDP
// flow limits (the refused counted, one freed letting the next in, a new limit taken without binding again); and a stopping proxy that waits for its open
// TCP connections and UDP flows up to its drain time, then cuts what is left.
import assert from 'node:assert/strict';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { once } from 'node:events';
import { type AddressInfo, createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { connect as tlsConnect } from 'node:tls';
import type { FleetConfig, Listener, ListenerLimits } from '../../src/ir/fleet-config.js';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy, type ProxyOptionsInput } from '../../src/proxy/index.js';
import { selfSigned } from '../support/certs.js';
import { fleet, forward, route, vhost } from '../support/fleet.js';
import { parsePrometheus, sampleValue } from '../support/prometheus.js';

// A bound on a hang, not a timing: the whole suite on a loaded 2-vCPU CI machine took more than 20 s once.
const WITHIN = { timeout: 180_000 };
type LogLine = Record<string, string | number>;
const proxyCert = { name: 'default/terminate', ...selfSigned('tls.example.com', ['tls.example.com']) };

/** A TCP backend that echoes what it reads upper-cased and ends when the client does. */
function echoBackend(): Server {
  return createServer((socket) => {
    socket.on('data', (chunk: Buffer) => socket.write(chunk.toString().toUpperCase()));
    socket.on('error', () => {});
  });
}

async function listening(server: Server): Promise<number> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

function until(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Sends `text` and reads until its upper-cased echo came back. */
async function echoed(socket: Socket, text: string): Promise<void> {
  let seen = '';
  const want = text.toUpperCase();
  const arrived = new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes(want)) {
        socket.off('data', onData);
        resolve();
      }
    };
    socket.on('data', onData);
    socket.once('error', reject);
  });
  socket.write(text);
  await arrived;
}

/** Resolves when `socket` closes; the test's timeout bounds the wait. */
const closed = (socket: Socket | { once(e: 'close', f: () => void): unknown }): Promise<void> =>
  new Promise((resolve) => socket.once('close', () => resolve()));

/** A connected TCP client, its errors swallowed (a refused one shows as a close). */
async function connected(port: number): Promise<Socket> {
  const socket = tcpConnect({ host: '127.0.0.1', port });
  socket.on('error', () => {});
  await once(socket, 'connect');
  return socket;
}

function l4Listener(port: number, protocol: Listener['protocol'], limits?: ListenerLimits): Listener {
  return {
    name: `port-${port}`,
    port,
    protocol,
    gatewayListeners: [{ gateway: 'default/eg', listener: `l${port}` }],
    ...(protocol === 'TLS'
      ? { tls: { certificates: [{ hostnames: ['tls.example.com'], secrets: [proxyCert.name] }] } }
      : {}),
    ...(limits === undefined ? {} : { limits }),
  };
}

/**
 * A TLS listener's own bounds, looser than the bounds tests' proxy options (2 KiB, 300 ms), so that its traffic
 * passing shows them winning.
 */
const OWN_TLS_LIMITS: ListenerLimits = { clientHelloMaxBytes: 8192, tlsHandshakeTimeoutMs: 600_000 };

/**
 * TLS 443 (terminate, the proxy's bounds), TLS 8443 (terminate, OWN_TLS_LIMITS), TCP 9000 and UDP 5353 to the
 * given backends, with the listeners' own limits.
 */
function layer4Fleet(tcpPort: number, udpPort: number, limits: ListenerLimits = {}): FleetConfig {
  const upstream = (name: string, protocol: 'tcp' | 'udp', port: number) => ({
    cluster: { name, service: { namespace: 'default', name, port }, protocol },
    endpoints: { name, endpoints: [{ address: '127.0.0.1', port }] },
  });
  return fleet(
    [
      {
        listener: l4Listener(443, 'TLS'),
        vhosts: [vhost(443, 'tls.example.com', [route(forward(['echo']))])],
      },
      {
        listener: l4Listener(8443, 'TLS', OWN_TLS_LIMITS),
        vhosts: [vhost(8443, 'tls.example.com', [route(forward(['echo']))])],
      },
      { listener: l4Listener(9000, 'TCP', limits), vhosts: [vhost(9000, '*', [route(forward(['echo']))])] },
      { listener: l4Listener(5353, 'UDP', limits), vhosts: [vhost(5353, '*', [route(forward(['dns']))])] },
    ],
    [upstream('echo', 'tcp', tcpPort), upstream('dns', 'udp', udpPort)],
    [proxyCert],
  );
}

/** Backends, a proxy in front of them, its access log lines and its metrics. */
async function startLayer4(limits: ListenerLimits, options: ProxyOptionsInput) {
  const tcp = echoBackend();
  const tcpPort = await listening(tcp);
  const dns = createSocket('udp4');
  dns.on('message', (msg, r) => dns.send(msg.toString().toUpperCase(), r.port, r.address));
  dns.bind(0, '127.0.0.1');
  await once(dns, 'listening');
  const lines: LogLine[] = [];
  const proxy = createProxy({
    bindAddress: '127.0.0.1',
    portMap: () => 0,
    log: discardingLogger,
    metricsAddress: '127.0.0.1:0',
    accessLog: {
      format: 'json',
      fields: [
        'protocol',
        'authority',
        'bytes_received',
        'bytes_sent',
        'duration_ms',
        'upstream_host',
        'response_flags',
        'listener',
      ],
      sampling: 1,
      flushIntervalMs: 10,
      write: (text) => {
        for (const line of text.split('\n')) if (line !== '') lines.push(JSON.parse(line) as LogLine);
      },
    },
    ...options,
  });
  await proxy.started;
  const config = (own: ListenerLimits) => layer4Fleet(tcpPort, dns.address().port, own);
  assert.deepEqual(await proxy.apply(config(limits)), { ok: true, listenerErrors: [] });
  const port = (name: string) => proxy.addresses().find((a) => a.listener === name)!.port;
  return {
    proxy,
    port,
    /** The fleet with other listener limits. */
    config,
    /** Waits for an access log line that `match` accepts. */
    async line(match: (l: LogLine) => boolean): Promise<LogLine> {
      for (;;) {
        const found = lines.find(match);
        if (found !== undefined) return found;
        await until(20);
      }
    },
    async metric(name: string, labels: Record<string, string>): Promise<number | undefined> {
      const text = await (await fetch(`http://127.0.0.1:${port('metrics')}/metrics`)).text();
      return sampleValue(parsePrometheus(text), name, labels);
    },
    /** Waits until the metric reaches `value`. */
    async metricReaches(name: string, labels: Record<string, string>, value: number): Promise<void> {
      while (((await this.metric(name, labels)) ?? 0) < value) await until(20);
    },
    async stop(): Promise<void> {
      await proxy.close();
      tcp.close();
      dns.close();
    },
  };
}

/** A UDP client that keeps the replies it gets. */
async function udpClient(): Promise<{ socket: UdpSocket; replies: string[] }> {
  const socket = createSocket('udp4');
  const replies: string[] = [];
  socket.on('message', (m) => replies.push(m.toString()));
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  return { socket, replies };
}

/** Sends `text` until a reply comes (a datagram may be dropped); the test's timeout bounds it. */
async function ask(client: { socket: UdpSocket; replies: string[] }, port: number, text: string) {
  const before = client.replies.length;
  while (client.replies.length === before) {
    client.socket.send(text, port, '127.0.0.1');
    await until(50);
  }
}

/** The TCP and UDP listeners' own limits in the bounds tests. */
const LIMITS: ListenerLimits = { maxConnections: 2, maxUdpFlows: 1, udpFlowIdleTimeoutMs: 200 };

// Every case on each relay of TCP and TLS listeners: the native thread and Node's sockets.
for (const layer4Relay of ['native', 'node'] as const) {
  describe(`layer-4 telemetry and bounds, ${layer4Relay} relay`, WITHIN, () => {
    let l4: Awaited<ReturnType<typeof startLayer4>>;

    before(async () => {
      l4 = await startLayer4(LIMITS, {
        layer4Relay,
        limits: { tlsHandshakeTimeoutMs: 300 },
        layer4: { clientHelloMaxBytes: 2048 },
      });
    });
    after(() => l4.stop());

    it('counts a TCP connection: bytes each way and its duration, in the metrics and the access log', async () => {
      const socket = await connected(l4.port('port-9000'));
      await echoed(socket, 'hello');
      socket.end();
      await closed(socket);
      const line = await l4.line((l) => l.protocol === 'TCP' && l.bytes_received === 5);
      assert.equal(line.bytes_sent, 5);
      assert.match(String(line.upstream_host), /^127\.0\.0\.1:\d+$/);
      assert.equal(typeof line.duration_ms, 'number');
      await l4.metricReaches('portico_layer4_sessions_total', { listener: 'port-9000' }, 1);
      const received = await l4.metric('portico_layer4_bytes_total', {
        listener: 'port-9000',
        direction: 'received',
      });
      const sent = await l4.metric('portico_layer4_bytes_total', {
        listener: 'port-9000',
        direction: 'sent',
      });
      assert.ok((received ?? 0) >= 5 && (sent ?? 0) >= 5, JSON.stringify({ received, sent }));
      assert.ok(
        ((await l4.metric('portico_layer4_session_seconds_total', { listener: 'port-9000' })) ?? -1) >= 0,
      );
    });

    it('counts a terminated TLS connection with its server name, and a UDP flow when it ends', async () => {
      const socket = tlsConnect({
        host: '127.0.0.1',
        port: l4.port('port-443'),
        servername: 'tls.example.com',
        ca: proxyCert.certificatePem,
      });
      await once(socket, 'secureConnect');
      await echoed(socket as unknown as Socket, 'secret');
      socket.end();
      await closed(socket);
      const tls = await l4.line((l) => l.protocol === 'TLS' && l.authority === 'tls.example.com');
      // TLS bytes as they crossed the wire: more than the plaintext.
      assert.ok(Number(tls.bytes_received) > 'secret'.length);
      const client = await udpClient();
      await ask(client, l4.port('port-5353'), 'query');
      client.socket.close();
      // The flow's line comes when it ends, at its listener's idle timeout (200 ms).
      const flow = await l4.line((l) => l.protocol === 'UDP' && l.bytes_received === 5);
      assert.equal(flow.bytes_sent, 5);
      await l4.metricReaches('portico_layer4_sessions_total', { listener: 'port-5353' }, 1);
    });

    it('closes a ClientHello over its size limit, and a connection that sends none in time, and logs why', async () => {
      // A real client's ClientHello, made larger than the limit (2 KiB) by the protocols it offers.
      const big = tlsConnect({
        host: '127.0.0.1',
        port: l4.port('port-443'),
        servername: 'tls.example.com',
        rejectUnauthorized: false,
        ALPNProtocols: Array.from({ length: 200 }, (_, i) => `protocol-number-${i}`),
      });
      big.on('error', () => {});
      await closed(big);
      await l4.line((l) => l.listener === 'port-443' && l.response_flags === 'invalid_request');
      const silent = await connected(l4.port('port-443'));
      await closed(silent);
      await l4.line((l) => l.listener === 'port-443' && l.response_flags === 'request_timeout');
      await l4.metricReaches('portico_layer4_sessions_total', { listener: 'port-443', route: '-' }, 2);
    });

    it("a TLS listener's own ClientHello size and handshake time win over the proxy's", async () => {
      // The ClientHello the proxy's 2 KiB refuses on 443 (the test above) completes a handshake under 8443's 8 KiB.
      const large = tlsConnect({
        host: '127.0.0.1',
        port: l4.port('port-8443'),
        servername: 'tls.example.com',
        ca: proxyCert.certificatePem,
        ALPNProtocols: Array.from({ length: 200 }, (_, i) => `protocol-number-${i}`),
      });
      await once(large, 'secureConnect');
      await echoed(large as unknown as Socket, 'large hello');
      large.destroy();
      // Silent connections to 8443, then 443: once 443's is closed at the proxy's 300 ms, 8443's (its timer set
      // first, had the proxy's bound applied) is still open and completes its handshake.
      const quiet = await connected(l4.port('port-8443'));
      const reference = await connected(l4.port('port-443'));
      await closed(reference);
      const late = tlsConnect({ socket: quiet, servername: 'tls.example.com', ca: proxyCert.certificatePem });
      await once(late, 'secureConnect');
      await echoed(late as unknown as Socket, 'late hello');
      late.destroy();
    });

    it("past its listener's maxConnections a TCP connection is closed at accept and counted; one freed lets the next in", async () => {
      const port = l4.port('port-9000');
      // The earlier tests' connections closed on the proxy's side too.
      while ((await l4.metric('portico_active_connections', { listener: 'port-9000' })) !== 0)
        await until(20);
      const held = [await connected(port), await connected(port)];
      await echoed(held[1]!, 'both open');
      const over = await connected(port);
      await closed(over);
      await l4.metricReaches('portico_connections_refused_total', { listener: 'port-9000' }, 1);
      held[0]!.destroy();
      // The proxy sees the close on its own time: try until a connection is served again.
      for (;;) {
        const next = await connected(port);
        // Still over the limit, it is closed; a reset if the proxy closed it after the client's bytes arrived.
        const served = await Promise.race([
          echoed(next, 'in').then(
            () => true,
            () => false,
          ),
          closed(next).then(() => false),
        ]);
        next.destroy();
        if (served) break;
      }
      held[1]!.destroy();
    });

    it('takes a new connection limit without binding again: the open connection stays, the new limit counts', async () => {
      const port = l4.port('port-9000');
      while ((await l4.metric('portico_active_connections', { listener: 'port-9000' })) !== 0)
        await until(20);
      const open = await connected(port);
      await echoed(open, 'before');
      const refusedBefore =
        (await l4.metric('portico_connections_refused_total', { listener: 'port-9000' })) ?? 0;
      assert.deepEqual(
        await l4.proxy.apply(l4.config({ maxConnections: 1, maxUdpFlows: 1, udpFlowIdleTimeoutMs: 200 })),
        {
          ok: true,
          listenerErrors: [],
        },
      );
      // Same socket: the connection opened before still relays, and a second one is past the new limit of 1.
      await echoed(open, 'after');
      const over = await connected(port);
      await closed(over);
      await l4.metricReaches(
        'portico_connections_refused_total',
        { listener: 'port-9000' },
        refusedBefore + 1,
      );
      assert.equal(l4.port('port-9000'), port);
      open.destroy();
      assert.deepEqual(await l4.proxy.apply(l4.config(LIMITS)), { ok: true, listenerErrors: [] });
    });

    it("past its listener's maxUdpFlows a new client is dropped and counted; the flow's end lets it in", async () => {
      const port = l4.port('port-5353');
      const first = await udpClient();
      const second = await udpClient();
      await ask(first, port, 'one');
      const refusedBefore =
        (await l4.metric('portico_connections_refused_total', { listener: 'port-5353' })) ?? 0;
      second.socket.send('two', port, '127.0.0.1');
      await l4.metricReaches(
        'portico_connections_refused_total',
        { listener: 'port-5353' },
        refusedBefore + 1,
      );
      // The first flow idles out (200 ms) and the second client's datagrams get through.
      await ask(second, port, 'two');
      assert.equal(second.replies.at(-1), 'TWO');
      first.socket.close();
      second.socket.close();
    });
  });

  describe(`a stopping proxy and its layer-4 connections, ${layer4Relay} relay`, WITHIN, () => {
    it('waits for an open TCP connection and a UDP flow up to its drain time, serving them meanwhile', async () => {
      const l4 = await startLayer4({ udpFlowIdleTimeoutMs: 300 }, { layer4Relay });
      const port = l4.port('port-9000');
      const open = await connected(port);
      const client = await udpClient();
      await ask(client, l4.port('port-5353'), 'before');
      let drained = false;
      const draining = l4.proxy.drain({ drainMs: 0, maxMs: 15_000 }).then(() => {
        drained = true;
      });
      // New connections are refused once the listener closed...
      for (;;) {
        const probe = tcpConnect({ host: '127.0.0.1', port });
        const refused = await new Promise<boolean>((resolve) => {
          probe.once('error', () => resolve(true));
          probe.once('connect', () => resolve(false));
        });
        probe.destroy();
        if (refused) break;
        await until(20);
      }
      // ...while the open connection and the UDP flow are still served.
      await echoed(open, 'still served');
      await ask(client, l4.port('port-5353'), 'during');
      assert.equal(drained, false);
      open.end();
      client.socket.close();
      // The connection ended and the flow idled out: the drain is done well before its 15 s.
      await draining;
      await l4.stop();
    });

    it('cuts what is still open at the end of its drain time', async () => {
      const l4 = await startLayer4({}, { layer4Relay });
      const open = await connected(l4.port('port-9000'));
      await echoed(open, 'held');
      const cut = closed(open);
      await l4.proxy.drain({ drainMs: 0, maxMs: 300 });
      await cut;
      await l4.stop();
    });
  });
}

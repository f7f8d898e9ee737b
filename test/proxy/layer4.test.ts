// Layer 4 through a real proxy with real clients and backends on loopback: TLS passed through by SNI to a
// backend that ends TLS itself (the client verifies the backend's certificate, so the proxy never decrypted), an
// unknown SNI refused, TLS ended at the proxy on a terminate entry of the same port, TCP split by weight, a
// half-closed connection finishing its other direction, a TCP connection and a UDP flow that outlive a config
// change, a UDP flow that ends after its idle timeout, and an access log line for each connection and flow.
import assert from 'node:assert/strict';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { once } from 'node:events';
import { type AddressInfo, createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createServer as createTlsServer, connect as tlsConnect } from 'node:tls';
import type { Cluster, FleetConfig, Listener, TlsCertificateChoice } from '../../src/ir/fleet-config.js';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy, type Proxy as PorticoProxy } from '../../src/proxy/index.js';
import { selfSigned } from '../support/certs.js';
import { fleet, forward, route, type Upstream, vhost } from '../support/fleet.js';

const WITHIN = { timeout: 20_000 };
const backendCert = selfSigned('abc.example.com', ['abc.example.com']);
const proxyCert = { name: 'default/terminate', ...selfSigned('tls.example.com', ['tls.example.com']) };

function l4Listener(
  port: number,
  protocol: Listener['protocol'],
  certificates?: TlsCertificateChoice[],
): Listener {
  return {
    name: `port-${port}`,
    port,
    protocol,
    gatewayListeners: [{ gateway: 'default/eg', listener: `l${port}` }],
    ...(certificates === undefined ? {} : { tls: { certificates } }),
  };
}

function l4Upstream(name: string, protocol: Cluster['protocol'], port: number): Upstream {
  return {
    cluster: { name, service: { namespace: 'default', name, port }, protocol },
    endpoints: { name, endpoints: [{ address: '127.0.0.1', port }] },
  };
}

async function listening(server: Server): Promise<number> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

/** A TCP backend that greets each connection with its name, then echoes lines upper-cased; at FIN, says `bye`. */
function tcpBackend(name: string): Server {
  return createServer({ allowHalfOpen: true }, (socket) => {
    socket.write(`${name}\n`);
    socket.on('data', (chunk: Buffer) => socket.write(chunk.toString().toUpperCase()));
    socket.on('end', () => socket.end('bye\n'));
  });
}

/** Reads from `socket` until `text` has arrived; returns everything read. */
function readUntil(socket: Socket, text: string, seen = { data: '' }): Promise<string> {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (seen.data.includes(text)) {
        socket.off('data', onData);
        resolve(seen.data);
      }
    };
    const onData = (chunk: Buffer) => {
      seen.data += chunk.toString();
      check();
    };
    socket.on('data', onData);
    socket.once('error', reject);
    check();
  });
}

// Every case on each relay of TCP and TLS listeners: the native thread and Node's sockets.
for (const layer4Relay of ['native', 'node'] as const)
  describe(`layer-4 listeners, ${layer4Relay} relay`, WITHIN, () => {
    let proxy: PorticoProxy;
    const servers: Server[] = [];
    const udp: UdpSocket[] = [];
    let ports: Record<string, number>;
    let config: (tcpCluster: string) => FleetConfig;
    const logLines: Record<string, string | number>[] = [];
    /** Waits for an access log line that `match` accepts. */
    async function logLine(match: (l: Record<string, string | number>) => boolean) {
      for (;;) {
        const found = logLines.find(match);
        if (found !== undefined) return found;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }

    before(async () => {
      const passBackend = createTlsServer(
        { cert: backendCert.certificatePem, key: backendCert.privateKeyPem },
        (socket) => socket.end(`backend saw ${(socket as unknown as { servername: string }).servername}\n`),
      );
      const [pass, plainA, plainB] = [passBackend, tcpBackend('a'), tcpBackend('b')];
      servers.push(pass, plainA, plainB);
      const passPort = await listening(pass);
      const aPort = await listening(plainA);
      const bPort = await listening(plainB);
      const dns = createSocket('udp4');
      udp.push(dns);
      dns.on('message', (msg, r) => dns.send(`${msg.toString()} from ${r.port}`, r.port, r.address));
      dns.bind(0, '127.0.0.1');
      await once(dns, 'listening');
      const udpPort = dns.address().port;
      const upstreams = [
        l4Upstream('pass', 'tcp', passPort),
        l4Upstream('a', 'tcp', aPort),
        l4Upstream('b', 'tcp', bPort),
        l4Upstream('dns', 'udp', udpPort),
      ];
      // The passthrough backend again, as a BackendTLSPolicy would have it: TLS from the proxy, verified.
      const reencrypt = l4Upstream('reencrypt', 'tcp', passPort);
      reencrypt.cluster.tls = {
        policy: 'default/backend',
        serverName: 'abc.example.com',
        caPem: backendCert.certificatePem,
        subjectAltNames: [],
      };
      upstreams.push(reencrypt);
      config = (tcpCluster) =>
        fleet(
          [
            {
              listener: l4Listener(443, 'TLS', [
                { hostnames: ['tls.example.com'], secrets: [proxyCert.name] },
                { hostnames: ['reencrypt.example.com'], secrets: [proxyCert.name] },
                { hostnames: ['*.example.com'], secrets: [], passthrough: true },
              ]),
              vhosts: [
                vhost(443, 'abc.example.com', [route(forward(['pass']))]),
                vhost(443, 'tls.example.com', [route(forward(['a']))]),
                vhost(443, 'reencrypt.example.com', [route(forward(['reencrypt']))]),
              ],
            },
            {
              listener: l4Listener(9000, 'TCP'),
              vhosts: [
                vhost(9000, '*', [
                  route(
                    forward(
                      tcpCluster === 'split'
                        ? [
                            { weight: 3, cluster: 'a', filters: [] },
                            { weight: 1, cluster: 'b', filters: [] },
                          ]
                        : [tcpCluster],
                    ),
                  ),
                ]),
              ],
            },
            { listener: l4Listener(5353, 'UDP'), vhosts: [vhost(5353, '*', [route(forward(['dns']))])] },
          ],
          upstreams,
          [proxyCert],
        );
      proxy = createProxy({
        bindAddress: '127.0.0.1',
        portMap: () => 0,
        log: discardingLogger,
        layer4Relay,
        layer4: { udpFlowIdleTimeoutMs: 300 },
        accessLog: {
          format: 'json',
          fields: [
            'protocol',
            'authority',
            'bytes_received',
            'bytes_sent',
            'upstream_host',
            'route_name',
            'listener',
          ],
          sampling: 1,
          flushIntervalMs: 10,
          write: (text) => {
            for (const line of text.split('\n'))
              if (line !== '') logLines.push(JSON.parse(line) as Record<string, string | number>);
          },
        },
      });
      assert.deepEqual(await proxy.apply(config('split')), { ok: true, listenerErrors: [] });
      ports = Object.fromEntries(proxy.addresses().map((a) => [a.listener, a.port]));
    });

    after(async () => {
      await proxy.close();
      for (const s of servers) s.close();
      for (const s of udp) s.close();
    });

    it('passes TLS through by SNI: the client verifies the backend certificate', async () => {
      const socket = tlsConnect({
        host: '127.0.0.1',
        port: ports['port-443']!,
        servername: 'abc.example.com',
        ca: backendCert.certificatePem,
      });
      await once(socket, 'secureConnect');
      assert.equal(socket.authorized, true);
      assert.equal(await readUntil(socket as unknown as Socket, '\n'), 'backend saw abc.example.com\n');
      socket.destroy();
      assert.equal((await logLine((l) => l.authority === 'abc.example.com')).protocol, 'TLS');
    });

    it('refuses a server name no listener serves', async () => {
      const socket = tlsConnect({
        host: '127.0.0.1',
        port: ports['port-443']!,
        servername: 'abc.example.org',
        rejectUnauthorized: false,
      });
      const [error] = await once(socket, 'error');
      assert.match(String(error), /unrecognized name|ECONNRESET|socket disconnected/i);
    });

    it('ends TLS at the proxy for a terminate entry and relays plaintext', async () => {
      const socket = tlsConnect({
        host: '127.0.0.1',
        port: ports['port-443']!,
        servername: 'tls.example.com',
        ca: proxyCert.certificatePem,
      });
      await once(socket, 'secureConnect');
      assert.equal(socket.authorized, true);
      const seen = { data: '' };
      await readUntil(socket as unknown as Socket, 'a\n', seen);
      socket.write('ping\n');
      assert.match(await readUntil(socket as unknown as Socket, 'PING\n', seen), /^a\nPING\n$/);
      socket.destroy();
    });

    it('originates TLS to the backend under a BackendTLSPolicy after ending the client TLS', async () => {
      const socket = tlsConnect({
        host: '127.0.0.1',
        port: ports['port-443']!,
        servername: 'reencrypt.example.com',
        rejectUnauthorized: false,
      });
      await once(socket, 'secureConnect');
      assert.equal(await readUntil(socket as unknown as Socket, '\n'), 'backend saw abc.example.com\n');
      socket.destroy();
    });

    it('splits TCP connections by weight (3:1) and finishes a half-closed connection', async () => {
      const names: string[] = [];
      for (let i = 0; i < 8; i++) {
        const socket = tcpConnect({ host: '127.0.0.1', port: ports['port-9000']!, allowHalfOpen: true });
        const seen = { data: '' };
        await readUntil(socket, '\n', seen);
        names.push(seen.data.trim());
        // Half-close: the backend answers our FIN with `bye` before its own FIN.
        socket.end();
        await readUntil(socket, 'bye\n', seen);
        await once(socket, 'close');
      }
      assert.equal(names.filter((n) => n === 'a').length, 6);
      assert.equal(names.filter((n) => n === 'b').length, 2);
      // Each connection is a line: what the client sent (nothing) and got (greeting and bye), and its backend.
      const line = await logLine((l) => l.protocol === 'TCP' && l.listener === 'port-9000');
      assert.equal(line.bytes_received, 0);
      assert.ok(Number(line.bytes_sent) >= 'a\nbye\n'.length);
      assert.match(String(line.upstream_host), /^127\.0\.0\.1:\d+$/);
    });

    it('keeps an open TCP connection and a UDP flow across a config change', async () => {
      const socket = tcpConnect({ host: '127.0.0.1', port: ports['port-9000']! });
      const seen = { data: '' };
      await readUntil(socket, '\n', seen);
      const first = seen.data.trim();
      const client = createSocket('udp4');
      udp.push(client);
      const replies: string[] = [];
      client.on('message', (m) => replies.push(m.toString()));
      client.send('q1', ports['port-5353']!, '127.0.0.1');
      while (replies.length < 1) await once(client, 'message');
      // Every new connection now goes to b; the open one stays where it was.
      assert.deepEqual(await proxy.apply(config('b')), { ok: true, listenerErrors: [] });
      socket.write('still here\n');
      await readUntil(socket, 'STILL HERE\n', seen);
      const fresh = tcpConnect({ host: '127.0.0.1', port: ports['port-9000']! });
      const freshSeen = { data: '' };
      await readUntil(fresh, '\n', freshSeen);
      assert.equal(freshSeen.data, 'b\n');
      assert.ok(first === 'a' || first === 'b');
      client.send('q2', ports['port-5353']!, '127.0.0.1');
      while (replies.length < 2) await once(client, 'message');
      // The same flow: the backend saw both datagrams from one upstream port.
      assert.equal(replies[0]!.split(' from ')[1], replies[1]!.split(' from ')[1]);
      socket.destroy();
      fresh.destroy();
    });

    it('ends an idle UDP flow: the next datagram opens a new one', async () => {
      const client = createSocket('udp4');
      udp.push(client);
      const replies: string[] = [];
      client.on('message', (m) => replies.push(m.toString()));
      client.send('first', ports['port-5353']!, '127.0.0.1');
      while (replies.length < 1) await once(client, 'message');
      const firstPort = replies[0]!.split(' from ')[1];
      // Wait on the condition: ask again, each time after the idle timeout could have passed, until a datagram
      // comes back through another upstream socket.
      for (;;) {
        await new Promise((resolve) => setTimeout(resolve, 700));
        client.send('again', ports['port-5353']!, '127.0.0.1');
        const before = replies.length;
        while (replies.length === before) await once(client, 'message');
        if (replies.at(-1)!.split(' from ')[1] !== firstPort) break;
      }
      const ended = await logLine((l) => l.protocol === 'UDP' && l.bytes_received === 'first'.length);
      assert.equal(ended.listener, 'port-5353');
    });
  });

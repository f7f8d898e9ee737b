// What a connection that says nothing costs: a TLS handshake that never starts is cut at its deadline (Node's
// default held it 120 s), as is an HTTP/2 connection (by ALPN or the cleartext preface) that never sends its
// SETTINGS; and a listener's open connections are bounded, the ones over it closed at accept and counted, while
// a connection freed lets the next one in. A listener's own handshake deadline wins over the proxy's.
import assert from 'node:assert/strict';
import { connect as netConnect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { connect as tlsConnect } from 'node:tls';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy, type Proxy as PorticoProxy } from '../../src/proxy/index.js';
import { selfSigned } from '../support/certs.js';
import { fleet, forward, listener, route, upstream, vhost } from '../support/fleet.js';
import { closeServer, httpRequest, startEcho } from '../support/http.js';
import { parsePrometheus, sampleValue } from '../support/prometheus.js';

const DEADLINE_MS = 300;
const MAX_CONNECTIONS = 4;

/** Resolves when `socket` closes; the caller's test timeout bounds the wait. */
const closed = (socket: Socket): Promise<void> =>
  new Promise((resolve) => socket.once('close', () => resolve()));

describe('the TLS handshake deadline and the per-listener connection cap', () => {
  let proxy: PorticoProxy;
  let echo: Awaited<ReturnType<typeof startEcho>>;
  let plainPort: number;
  let tlsPort: number;
  /** An HTTPS listener with its own (long) handshake deadline. */
  let patientPort: number;
  let metricsPort: number;
  const cert = selfSigned('tls.example.com', ['tls.example.com']);

  before(async () => {
    echo = await startEcho('a');
    proxy = createProxy({
      bindAddress: '127.0.0.1',
      portMap: () => 0,
      log: discardingLogger,
      metricsAddress: '127.0.0.1:0',
      limits: { tlsHandshakeTimeoutMs: DEADLINE_MS, maxConnections: MAX_CONNECTIONS },
      http2: { prefaceTimeoutMs: DEADLINE_MS },
    });
    await proxy.started;
    const config = fleet(
      [
        { listener: listener(80), vhosts: [vhost(80, '*', [route(forward(['a']))])] },
        {
          listener: listener(443, {
            certificates: [{ hostnames: ['tls.example.com'], secrets: ['default/tls'] }],
          }),
          vhosts: [vhost(443, 'tls.example.com', [route(forward(['a']))])],
        },
        {
          listener: {
            ...listener(8443, {
              certificates: [{ hostnames: ['tls.example.com'], secrets: ['default/tls'] }],
            }),
            limits: { tlsHandshakeTimeoutMs: 600_000 },
          },
          vhosts: [vhost(8443, 'tls.example.com', [route(forward(['a']))])],
        },
      ],
      [upstream('a', [echo.port])],
      [{ name: 'default/tls', ...cert }],
    );
    assert.deepEqual(await proxy.apply(config), { ok: true, listenerErrors: [] });
    plainPort = proxy.addresses().find((a) => a.listener === 'port-80')!.port;
    tlsPort = proxy.addresses().find((a) => a.listener === 'port-443')!.port;
    patientPort = proxy.addresses().find((a) => a.listener === 'port-8443')!.port;
    metricsPort = proxy.addresses().find((a) => a.listener === 'metrics')!.port;
  });

  after(async () => {
    await proxy.close();
    await closeServer(echo.server);
  });

  it('a TLS connection that never starts its handshake is cut at the handshake deadline', async () => {
    const socket = netConnect({ host: '127.0.0.1', port: tlsPort });
    socket.on('error', () => {});
    const started = Date.now();
    await closed(socket);
    assert.ok(Date.now() - started >= DEADLINE_MS - 50, 'not before its deadline');
  });

  it("a listener's own handshake deadline wins over the proxy's", async () => {
    // Silent connections to 8443, then 443: once 443's is cut at the proxy's deadline, 8443's (its timer set first,
    // had the proxy's deadline applied to it) is still open and completes its handshake.
    const patient = netConnect({ host: '127.0.0.1', port: patientPort });
    patient.on('error', () => {});
    await new Promise((resolve) => patient.once('connect', resolve));
    const reference = netConnect({ host: '127.0.0.1', port: tlsPort });
    reference.on('error', () => {});
    await closed(reference);
    const secure = tlsConnect({ socket: patient, servername: 'tls.example.com', ca: cert.certificatePem });
    await new Promise((resolve, reject) => {
      secure.once('secureConnect', resolve);
      secure.once('error', reject);
      secure.once('close', () => reject(new Error('closed before the handshake')));
    });
    secure.destroy();
  });

  it('a TLS connection that chose h2 and sends no preface is cut at the preface deadline', async () => {
    const socket = tlsConnect({
      host: '127.0.0.1',
      port: tlsPort,
      servername: 'tls.example.com',
      ALPNProtocols: ['h2'],
      rejectUnauthorized: false,
    });
    socket.on('error', () => {});
    await new Promise((resolve) => socket.once('secureConnect', resolve));
    assert.equal(socket.alpnProtocol, 'h2');
    const started = Date.now();
    // Read what the server sends (its SETTINGS): a paused socket would not hear the close.
    socket.resume();
    await closed(socket);
    assert.ok(Date.now() - started >= DEADLINE_MS - 50, 'not before its deadline');
  });

  it('a cleartext connection that sends the HTTP/2 preface but no SETTINGS is cut at the preface deadline', async () => {
    const socket = netConnect({ host: '127.0.0.1', port: plainPort });
    socket.on('error', () => {});
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
    const started = Date.now();
    socket.resume();
    await closed(socket);
    assert.ok(Date.now() - started >= DEADLINE_MS - 50, 'not before its deadline');
  });

  it(`past ${MAX_CONNECTIONS} open connections a new one is closed at accept and counted; one freed lets the next in`, async () => {
    const held: Socket[] = [];
    for (let i = 0; i < MAX_CONNECTIONS; i++) {
      const socket = netConnect({ host: '127.0.0.1', port: plainPort });
      socket.on('error', () => {});
      await new Promise((resolve) => socket.once('connect', resolve));
      held.push(socket);
    }
    const over = netConnect({ host: '127.0.0.1', port: plainPort });
    over.on('error', () => {});
    await closed(over);
    const metrics = parsePrometheus(await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text());
    assert.equal(sampleValue(metrics, 'portico_connections_refused_total', { listener: 'port-80' }), 1);
    const freed = held.pop()!;
    freed.destroy();
    await closed(freed);
    // The server hears the close a moment after the client: the next request may need a try or two.
    let status = 0;
    for (let attempt = 0; attempt < 50 && status !== 200; attempt++) {
      status = await httpRequest(plainPort, '/', { timeoutMs: 2_000 })
        .then((r) => r.status)
        .catch(() => 0);
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.equal(status, 200);
    for (const socket of held) socket.destroy();
  });
});

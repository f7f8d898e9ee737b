// Layer-4 listener limits set by a ClientTrafficPolicy, through the real standalone proxy from YAML: a UDP
// listener's maxUdpFlows holds new clients out while the flows it allows are live (counted as refusals), and its
// udpFlowIdleTimeout frees a quiet flow's place; a TCP listener's maxConnections closes connections past it at
// accept while the first stays served; a TLS listener's maxClientHelloBytes and tlsHandshakeTimeout hold where the
// same listener without the policy lets the same client by.
import assert from 'node:assert/strict';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { createServer as createTlsServer, connect as tlsConnect } from 'node:tls';
import { PORTS } from '../../../src/ir/well-known.js';
import { selfSigned } from '../../support/certs.js';
import { parsePrometheus, sampleValue } from '../../support/prometheus.js';
import {
  defer,
  eventually,
  localServiceYaml,
  PORTICO_CLASS_YAML,
  programmedAddress,
  startStandalone,
  tempDir,
} from './harness.js';

const UDP_PORT = 5353;
const TCP_PORT = 7000;

function config(udpBackend: number, tcpBackend: number): string {
  return `${PORTICO_CLASS_YAML}apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: l4, namespace: default}
spec:
  gatewayClassName: portico
  listeners:
  - {name: dns, protocol: UDP, port: ${UDP_PORT}}
  - {name: tcp, protocol: TCP, port: ${TCP_PORT}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: UDPRoute
metadata: {name: dns, namespace: default}
spec:
  parentRefs: [{name: l4, sectionName: dns}]
  rules: [{backendRefs: [{name: udp-echo, port: 53}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: TCPRoute
metadata: {name: tcp, namespace: default}
spec:
  parentRefs: [{name: l4, sectionName: tcp}]
  rules: [{backendRefs: [{name: tcp-echo, port: 7}]}]
---
apiVersion: gateway.portico.io/v1alpha1
kind: ClientTrafficPolicy
metadata: {name: dns-flows, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: l4, sectionName: dns}]
  limits: {maxUdpFlows: 1, udpFlowIdleTimeout: 1s}
---
apiVersion: gateway.portico.io/v1alpha1
kind: ClientTrafficPolicy
metadata: {name: tcp-connections, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: l4, sectionName: tcp}]
  limits: {maxConnections: 1}
---
${localServiceYaml('udp-echo', 53, udpBackend, 'dns', 'UDP')}---
${localServiceYaml('tcp-echo', 7, tcpBackend, 'echo')}`;
}

/** A UDP client of the listener; `replies` grows with every datagram that comes back. */
async function udpClient(address: string): Promise<{ socket: UdpSocket; replies: string[] }> {
  const socket = createSocket('udp4');
  const replies: string[] = [];
  socket.on('message', (m) => replies.push(m.toString()));
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  socket.connect(UDP_PORT, address);
  await once(socket, 'connect');
  return { socket, replies };
}

/** Sends `text` every 100 ms until `done` holds, so a live flow stays live meanwhile. */
async function sendUntil<T>(
  socket: UdpSocket,
  text: string,
  what: string,
  done: () => T | undefined,
): Promise<T> {
  const timer = setInterval(() => socket.send(text), 100);
  try {
    return await eventually(what, async () => done());
  } finally {
    clearInterval(timer);
  }
}

async function refusals(address: string, listener: string): Promise<number> {
  const text = await (await fetch(`http://${address}:${PORTS.metrics}/metrics`)).text();
  return sampleValue(parsePrometheus(text), 'portico_connections_refused_total', { listener }) ?? 0;
}

test('a ClientTrafficPolicy bounds UDP flows (and frees an idle one) and TCP connections on their listeners', async (t) => {
  const udpEcho = createSocket('udp4');
  udpEcho.on('message', (m, r) => udpEcho.send(`echo ${m.toString()}`, r.port, r.address));
  udpEcho.bind(0, '127.0.0.1');
  await once(udpEcho, 'listening');
  const tcpEcho = createServer((s) => s.pipe(s));
  tcpEcho.listen(0, '127.0.0.1');
  await once(tcpEcho, 'listening');
  defer(t, () => {
    udpEcho.close();
    tcpEcho.close();
  });
  const dir = await tempDir(t, 'l4-limits');
  await writeFile(
    join(dir, 'l4.yaml'),
    config(udpEcho.address().port, (tcpEcho.address() as AddressInfo).port),
  );
  const stateDir = await tempDir(t, 'l4-limits-state');
  const c = await startStandalone(t, { args: ['-f', dir], pool: '127.0.93.0/24', stateDir });
  const address = await programmedAddress(c.admin, 'default', 'l4');

  const first = await udpClient(address);
  const second = await udpClient(address);
  defer(t, () => {
    first.socket.close();
    second.socket.close();
  });
  await sendUntil(first.socket, 'one', 'the first client answered', () =>
    first.replies.includes('echo one') ? true : undefined,
  );
  // While the first flow is live, the second client's datagrams are refused, each counted.
  const before = await refusals(address, `port-${UDP_PORT}`);
  const second0 = second.replies.length;
  const keepAlive = setInterval(() => first.socket.send('one'), 100);
  try {
    await sendUntil(second.socket, 'two', 'the second client refused', async () =>
      (await refusals(address, `port-${UDP_PORT}`)) >= before + 3 ? true : undefined,
    );
    assert.equal(second.replies.length, second0, 'no reply reached the refused client');
  } finally {
    clearInterval(keepAlive);
  }
  // The first goes quiet: after the idle timeout its place is the second's.
  await sendUntil(second.socket, 'two', 'the second client answered once the first flow idled out', () =>
    second.replies.includes('echo two') ? true : undefined,
  );

  // TCP: one connection is served; a second one is closed at accept, and counted.
  const held: Socket = connect(TCP_PORT, address);
  defer(t, () => {
    held.destroy();
  });
  held.setEncoding('utf8');

  let echoed = '';
  held.on('data', (d: string) => {
    echoed += d;
  });
  await eventually('the first TCP connection served', async () => {
    held.write('ping');
    return echoed.includes('ping') ? true : undefined;
  });
  const tcpBefore = await refusals(address, `port-${TCP_PORT}`);
  const extra = connect(TCP_PORT, address);
  // Closed at accept: a reset (an error event) or a plain close, either way nothing is served.
  extra.on('error', () => {});
  const closed = new Promise((resolve) => extra.on('close', resolve));
  let extraData = '';
  extra.on('data', (d) => {
    extraData += d.toString();
  });
  extra.write('pong');
  await closed;
  assert.equal(extraData, '', 'the connection past the limit got nothing');
  assert.equal(await refusals(address, `port-${TCP_PORT}`), tcpBefore + 1);
  held.write('again');
  await eventually('the first connection still served', async () =>
    echoed.includes('again') ? true : undefined,
  );
});

const STRICT_PORT = 8443;
const OPEN_PORT = 9443;

/** Two passthrough TLS listeners to one TLS backend; a ClientTrafficPolicy bounds the first one's ClientHello. */
function tlsConfig(tlsBackend: number): string {
  return `${PORTICO_CLASS_YAML}apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: tls, namespace: default}
spec:
  gatewayClassName: portico
  listeners:
  - {name: strict, protocol: TLS, port: ${STRICT_PORT}, tls: {mode: Passthrough}}
  - {name: open, protocol: TLS, port: ${OPEN_PORT}, tls: {mode: Passthrough}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {name: secure, namespace: default}
spec:
  parentRefs: [{name: tls}]
  hostnames: [secure.example.com]
  rules: [{backendRefs: [{name: secure, port: 443}]}]
---
apiVersion: gateway.portico.io/v1alpha1
kind: ClientTrafficPolicy
metadata: {name: strict-hello, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: tls, sectionName: strict}]
  limits: {maxClientHelloBytes: 1024, tlsHandshakeTimeout: 500ms}
---
${localServiceYaml('secure', 443, tlsBackend, 'tls')}`;
}

/** A TLS client of `port` offering `protocols` (each adds its length to the ClientHello); resolves on the handshake. */
function handshake(address: string, port: number, protocols: string[], socket?: Socket): Promise<boolean> {
  // A socket the proxy already closed emits nothing more once wrapped.
  if (socket?.destroyed === true || socket?.readableEnded === true) return Promise.resolve(false);
  return new Promise((resolve) => {
    const client = tlsConnect({
      ...(socket === undefined ? { host: address, port } : { socket }),
      servername: 'secure.example.com',
      rejectUnauthorized: false,
      ALPNProtocols: protocols,
    });
    client.once('secureConnect', () => {
      client.destroy();
      resolve(true);
    });
    client.once('error', () => resolve(false));
    client.once('close', () => resolve(false));
  });
}

test("a ClientTrafficPolicy bounds a TLS listener's ClientHello size and handshake time; its neighbour without one lets the same clients by", {
  timeout: 120_000,
}, async (t) => {
  const certificate = selfSigned('secure.example.com', ['secure.example.com']);
  const backend = createTlsServer({ cert: certificate.certificatePem, key: certificate.privateKeyPem }, (s) =>
    s.end(),
  );
  backend.listen(0, '127.0.0.1');
  await once(backend, 'listening');
  defer(t, () => {
    backend.close();
  });
  const dir = await tempDir(t, 'tls-limits');
  await writeFile(join(dir, 'tls.yaml'), tlsConfig((backend.address() as AddressInfo).port));
  const stateDir = await tempDir(t, 'tls-limits-state');
  const c = await startStandalone(t, { args: ['-f', dir], pool: '127.0.95.0/24', stateDir });
  const address = await programmedAddress(c.admin, 'default', 'tls');

  // A small ClientHello passes through both; one of about 1.5 KiB (60 offered protocols) only the open listener.
  await eventually('the strict listener passing a small ClientHello through', async () =>
    (await handshake(address, STRICT_PORT, ['h2'])) ? true : undefined,
  );
  const large = Array.from({ length: 60 }, (_, i) => `protocol-number-${i}`);
  assert.equal(await handshake(address, OPEN_PORT, large), true, 'under the default 16 KiB');
  assert.equal(await handshake(address, STRICT_PORT, large), false, 'over the policy’s 1024 bytes');

  // Silent connections to the open listener (default 10 s), then to the strict one (500 ms): once the strict
  // one is closed, the open one (its timer set first, had the strict bound applied to both) completes a handshake.
  const quiet = connect(OPEN_PORT, address);
  await once(quiet, 'connect');
  const reference = connect(STRICT_PORT, address);
  reference.on('error', () => {});
  await once(reference, 'connect');
  await once(reference, 'close');
  assert.equal(await handshake(address, OPEN_PORT, ['h2'], quiet), true);
});

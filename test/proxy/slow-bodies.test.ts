// Slow request bodies cannot exhaust an endpoint's upstream connections: a body takes a connection only once it
// is in (or large), and a body that stalls is answered 408 and lets go of what it holds.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { test } from 'node:test';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy, type Proxy as PorticoProxy } from '../../src/proxy/index.js';
import { forward, route, simpleFleet, upstream, vhost } from '../support/fleet.js';
import { closeServer, httpRequest, listen } from '../support/http.js';
import { TEST_LIMITS } from '../support/limits.js';

interface Backend {
  server: Server;
  port: number;
  /** Connections the proxy opened to it, so far. */
  connections: () => number;
}

/** Reads each request body whole and answers with its length. */
async function startBackend(): Promise<Backend> {
  let connections = 0;
  const server = createServer((req, res) => {
    let bytes = 0;
    req.on('data', (c: Buffer) => {
      bytes += c.length;
    });
    req.on('end', () => res.end(String(bytes)));
  });
  server.on('connection', () => {
    connections++;
  });
  return { server, port: await listen(server), connections: () => connections };
}

async function startProxy(
  backend: Backend,
  limits: Partial<typeof TEST_LIMITS>,
  connectionsPerEndpoint: number,
  routeTimeoutMs = 15_000,
): Promise<{ proxy: PorticoProxy; port: number }> {
  const proxy = createProxy({
    bindAddress: '127.0.0.1',
    portMap: () => 0,
    log: discardingLogger,
    limits: { ...TEST_LIMITS, ...limits },
    upstreamConnectionsPerEndpoint: connectionsPerEndpoint,
  });
  const config = simpleFleet(
    [vhost(80, 'example.com', [route(forward(['default/b:80'], { timeoutMs: routeTimeoutMs }))])],
    [upstream('default/b:80', [backend.port])],
  );
  assert.equal((await proxy.apply(config)).ok, true);
  return { proxy, port: proxy.addresses().find((x) => x.listener === 'port-80')!.port };
}

/** A raw client that sends a POST head announcing `length` bytes and then `sent` of them; returns its answer. */
function upload(port: number, length: number, sent: string): { socket: Socket; answer: Promise<string> } {
  const socket = connect({ host: '127.0.0.1', port });
  socket.write(`POST /up HTTP/1.1\r\nhost: example.com\r\ncontent-length: ${length}\r\n\r\n${sent}`);
  let text = '';
  socket.setEncoding('utf8');
  socket.on('data', (c: string) => {
    text += c;
  });
  socket.on('error', () => {});
  const answer = new Promise<string>((resolve) => socket.on('close', () => resolve(text)));
  return { socket, answer };
}

test('clients trickling bodies hold no upstream connection: others are answered at once', async (t) => {
  const backend = await startBackend();
  t.after(() => closeServer(backend.server));
  const { proxy, port } = await startProxy(backend, {}, 2);
  t.after(() => proxy.close());
  // More slow clients than the endpoint has connections, each sending one byte every 100 ms.
  const slow = Array.from({ length: 6 }, () => upload(port, 200, 'x'));
  const ticker = setInterval(() => {
    for (const s of slow) s.socket.write('x');
  }, 100);
  t.after(() => {
    clearInterval(ticker);
    for (const s of slow) s.socket.destroy();
  });
  let slowEnded = 0;
  for (const s of slow) void s.answer.then(() => slowEnded++);
  await new Promise((resolve) => setTimeout(resolve, 300));
  const reply = await httpRequest(port, '/', {
    host: 'example.com',
    method: 'POST',
    body: 'hello',
    timeoutMs: 3000,
  });
  assert.equal(reply.status, 200);
  assert.equal(reply.body, '5');
  // Their bodies take 20 s to arrive: an answer queued behind them would come only after they ended.
  assert.equal(slowEnded, 0, 'answered while every slow upload was still sending');
  assert.equal(backend.connections(), 1, 'only the complete request reached the backend');
});

test('a body that stalls is answered 408 and releases the upstream connection it held', async (t) => {
  const backend = await startBackend();
  t.after(() => closeServer(backend.server));
  // One connection per endpoint; bodies over 1 KiB stream, so the stalled upload below holds that connection.
  const { proxy, port } = await startProxy(
    backend,
    { requestBodyIdleTimeoutMs: 300, requestBodyBufferBytes: 1024 },
    1,
  );
  t.after(() => proxy.close());
  const stalled = upload(port, 8192, 'x'.repeat(2048));
  t.after(() => stalled.socket.destroy());
  const answer = await stalled.answer;
  assert.match(answer, /^HTTP\/1\.1 408 /);
  assert.match(answer, /connection: close/);
  assert.equal(backend.connections(), 1, 'the stalled upload had taken the connection');
  const next = await httpRequest(port, '/', { host: 'example.com', timeoutMs: 3000 });
  assert.equal(next.status, 200, 'the connection was released');
});

test('a small body that stalls gets 408 without ever reaching the backend', async (t) => {
  const backend = await startBackend();
  t.after(() => closeServer(backend.server));
  const { proxy, port } = await startProxy(backend, { requestBodyIdleTimeoutMs: 300 }, 1);
  t.after(() => proxy.close());
  const stalled = upload(port, 100, 'x'.repeat(10));
  t.after(() => stalled.socket.destroy());
  assert.match(await stalled.answer, /^HTTP\/1\.1 408 /);
  assert.equal(backend.connections(), 0);
});

test('a body still trickling in when the route timeout passes is answered 408, not 504', async (t) => {
  const backend = await startBackend();
  t.after(() => closeServer(backend.server));
  const { proxy, port } = await startProxy(backend, {}, 1, 500);
  t.after(() => proxy.close());
  const slow = upload(port, 100, 'x');
  const ticker = setInterval(() => slow.socket.write('x'), 50);
  t.after(() => {
    clearInterval(ticker);
    slow.socket.destroy();
  });
  assert.match(await slow.answer, /^HTTP\/1\.1 408 /);
  assert.equal(backend.connections(), 0);
});

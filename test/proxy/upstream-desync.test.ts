// A backend whose bytes do not match the request they answer poisons nothing: extra bytes after a complete
// response (in the same write or later), a body on a response that has none, a storm of interim 1xx responses,
// and a response to CONNECT each end with that connection closed, never reused, and the next request to the
// same backend gets its own response on a connection of its own. A backend written by hand on raw sockets.
import assert from 'node:assert/strict';
import { type AddressInfo, connect, createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy, type Proxy as PorticoProxy } from '../../src/proxy/index.js';
import { EndpointPool, UpstreamExchange } from '../../src/proxy/upstream/http1.js';
import type { UpstreamSink } from '../../src/proxy/upstream/upstream.js';
import { forward, route, simpleFleet, upstream, vhost } from '../support/fleet.js';
import { until } from '../support/http.js';

const WITHIN = { timeout: 15_000 };
const FORGED = 'HTTP/1.1 200 OK\r\ncontent-length: 6\r\nx-conn: forged\r\n\r\nforged';
/** More interim responses than any real backend sends before its answer. */
const STORM = 1000;

/** A response with the request's path as its body and the connection's number in `x-conn`. */
function own(conn: number, path: string): string {
  const body = `own ${path}`;
  return `HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\nx-conn: ${conn}\r\n\r\n${body}`;
}

interface Seen {
  conn: number;
  method: string;
  path: string;
}

/**
 * The backend: answers each request head by its path, some wrongly; records every request it read and every
 * connection that closed. After answering CONNECT it is a tunnel: whatever comes next gets `tunnel`.
 */
function misbehavingBackend(seen: Seen[], closed: Set<number>): Server {
  let connections = 0;
  return createServer((socket: Socket) => {
    const conn = ++connections;
    let buffered = '';
    let tunnel = false;
    socket.setEncoding('latin1');
    socket.on('close', () => closed.add(conn));
    socket.on('error', () => socket.destroy());
    socket.on('data', (chunk: string) => {
      if (tunnel) {
        socket.write(`HTTP/1.1 200 OK\r\ncontent-length: 6\r\nx-conn: ${conn}\r\n\r\ntunnel`);
        return;
      }
      buffered += chunk;
      for (let end = buffered.indexOf('\r\n\r\n'); end >= 0; end = buffered.indexOf('\r\n\r\n')) {
        const [method = '', path = ''] = buffered.slice(0, buffered.indexOf('\r\n')).split(' ');
        buffered = buffered.slice(end + 4);
        seen.push({ conn, method, path });
        const answer = own(conn, path);
        if (method === 'CONNECT') {
          tunnel = true;
          socket.write('HTTP/1.1 200 Connection established\r\ncontent-length: 0\r\n\r\n');
        } else if (path === '/extra-same-write') socket.write(answer + FORGED);
        else if (path === '/extra-later') {
          socket.write(answer);
          setImmediate(() => socket.write(FORGED));
        } else if (path === '/extra-chunked')
          socket.write(
            `HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\nx-conn: ${conn}\r\n\r\n3\r\nown\r\n0\r\n\r\n${FORGED}`,
          );
        else if (path === '/no-content-with-body')
          socket.write(`HTTP/1.1 204 No Content\r\nx-conn: ${conn}\r\n\r\n${FORGED}`);
        else if (path === '/head-with-body') socket.write(`${answer}`);
        else if (path === '/interim') {
          socket.write('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </style.css>\r\n\r\n');
          socket.write(answer);
        } else if (path === '/interim-storm') {
          socket.write('HTTP/1.1 100 Continue\r\n\r\n'.repeat(STORM));
          socket.write(answer);
        } else socket.write(answer);
      }
    });
  });
}

interface Reply {
  status: number;
  conn: string | undefined;
  body: string;
}

/** The data of a chunked body (extensions and trailers left out). */
function dechunked(body: string): string {
  let data = '';
  let at = 0;
  for (;;) {
    const lineEnd = body.indexOf('\r\n', at);
    const size = Number.parseInt(body.slice(at, lineEnd), 16);
    if (!(size > 0)) return data;
    data += body.slice(lineEnd + 2, lineEnd + 2 + size);
    at = lineEnd + 2 + size + 2;
  }
}

/** One request on a connection of its own, written byte for byte; the answer read to the connection's end. */
function request(port: number, method: string, target: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    let text = '';
    socket.setEncoding('latin1');
    socket.on('connect', () =>
      socket.write(`${method} ${target} HTTP/1.1\r\nhost: example.com\r\nconnection: close\r\n\r\n`),
    );
    socket.on('data', (chunk: string) => {
      text += chunk;
    });
    socket.on('end', () => {
      const headEnd = text.indexOf('\r\n\r\n');
      const head = text.slice(0, headEnd + 2);
      const body = text.slice(headEnd + 4);
      resolve({
        status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0),
        conn: /\r\nx-conn: ([^\r]*)\r\n/i.exec(head)?.[1],
        body: /\r\ntransfer-encoding: chunked\r\n/i.test(head) ? dechunked(body) : body,
      });
    });
    socket.on('error', reject);
  });
}

describe('an upstream answer that does not match its request poisons no pooled connection', () => {
  let proxy: PorticoProxy;
  let port: number;
  const seen: Seen[] = [];
  const closed = new Set<number>();
  const backend = misbehavingBackend(seen, closed);

  before(async () => {
    await new Promise<void>((resolve) => backend.listen({ host: '127.0.0.1', port: 0 }, resolve));
    const config = simpleFleet(
      [vhost(80, 'example.com', [route(forward(['default/raw:80']))])],
      [upstream('default/raw:80', [(backend.address() as AddressInfo).port])],
    );
    proxy = createProxy({ bindAddress: '127.0.0.1', portMap: () => 0, log: discardingLogger });
    assert.deepEqual(await proxy.apply(config), { ok: true, listenerErrors: [] });
    port = proxy.addresses().find((a) => a.listener === 'port-80')!.port;
  });

  after(async () => {
    await proxy.close();
    backend.close();
  });

  /**
   * After `first` (answered as `expected`) the connection that served it is closed by the proxy, and a next
   * request gets its own answer on another connection.
   */
  async function nothingPoisoned(method: string, first: string, expected: Partial<Reply>): Promise<void> {
    const reply = await request(port, method, first);
    for (const [key, value] of Object.entries(expected))
      assert.equal(reply[key as keyof Reply], value, `${method} ${first}: ${key}`);
    const served = seen.findLast((s) => s.path === first && s.method === method)!.conn;
    // The proxy closes it (the backend sees the close); a build that kept it would time out here.
    await until(() => closed.has(served));
    const next = await request(port, 'GET', `/after${first}`);
    assert.equal(next.body, `own /after${first}`, `the request after ${first}`);
    assert.notEqual(next.conn, String(served), `the request after ${first} reused its connection`);
  }

  it(
    'extra bytes after a complete response, in the same write or later, close the connection',
    WITHIN,
    async () => {
      await nothingPoisoned('GET', '/extra-same-write', { status: 200, body: 'own /extra-same-write' });
      await nothingPoisoned('GET', '/extra-later', { status: 200, body: 'own /extra-later' });
      await nothingPoisoned('GET', '/extra-chunked', { status: 200, body: 'own' });
    },
  );

  it('a body on a response that has none closes the connection', WITHIN, async () => {
    await nothingPoisoned('GET', '/no-content-with-body', { status: 204, body: '' });
    await nothingPoisoned('HEAD', '/head-with-body', { status: 200, body: '' });
  });

  it(
    'interim responses are skipped, but a storm of them is refused and its connection closed',
    WITHIN,
    async () => {
      const few = await request(port, 'GET', '/interim');
      assert.equal(few.status, 200);
      assert.equal(few.body, 'own /interim');
      await nothingPoisoned('GET', '/interim-storm', { status: 502 });
    },
  );

  it('CONNECT is never sent to a backend', WITHIN, async () => {
    const reply = await request(port, 'CONNECT', 'backend.example.com:443');
    assert.equal(reply.status, 405);
    assert.equal(
      seen.some((s) => s.method === 'CONNECT'),
      false,
    );
    const next = await request(port, 'GET', '/after-connect');
    assert.equal(next.body, 'own /after-connect');
  });
});

describe('the upstream client itself', () => {
  it('never reuses a connection that carried CONNECT, whatever the answer says', WITHIN, async () => {
    const seen: Seen[] = [];
    const closed = new Set<number>();
    const backend = misbehavingBackend(seen, closed);
    await new Promise<void>((resolve) => backend.listen({ host: '127.0.0.1', port: 0 }, resolve));
    const pool = new EndpointPool('127.0.0.1', (backend.address() as AddressInfo).port, 'backend', {
      maxConnections: 1,
      idleTimeoutMs: 60_000,
      connectTimeoutMs: 5_000,
      sendTimeoutMs: 60_000,
    });
    try {
      const send = (method: string, target: string) =>
        new Promise<string>((resolve, reject) => {
          let body = '';
          const sink: UpstreamSink = {
            onUpstreamHead: () => {},
            onUpstreamData: (chunk) => {
              body += chunk.toString('latin1');
              return true;
            },
            onUpstreamEnd: (last) => resolve(body + (last?.toString('latin1') ?? '')),
            onUpstreamError: reject,
          };
          const head = `${method} ${target} HTTP/1.1\r\nhost: backend\r\n\r\n`;
          pool.send(new UpstreamExchange(head, null, false, false, sink));
        });
      assert.equal(await send('CONNECT', 'elsewhere.example.com:443'), '');
      // The backend made its connection a tunnel: a request sent on it would get the tunnel's bytes.
      assert.equal(await send('GET', '/next'), 'own /next');
      await until(() => closed.has(1));
      assert.deepEqual(
        seen.map((s) => s.conn),
        [1, 2],
      );
    } finally {
      pool.destroy();
      backend.close();
    }
  });
});

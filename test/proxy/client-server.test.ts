// The proxy's own HTTP/1.1 server on its own, over raw sockets: pipelining in order, 100-continue, HTTP/1.0,
// response framing, half-closed clients, early answers to uploads, timeouts and bad bodies.
import assert from 'node:assert/strict';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { ClientResponse } from '../../src/proxy/downstream/client-response.js';
import { type ClientServer, createClientServer } from '../../src/proxy/downstream/client-server.js';
import type { ClientRequest } from '../../src/proxy/exchange.js';
import { TEST_LIMITS } from '../support/limits.js';

/** Answers by path: /slow after 50 ms, /echo with the request body, /chunked without a length, /early at once. */
const seenPaths: string[] = [];
function handle(req: ClientRequest, res: ClientResponse): void {
  seenPaths.push(req.url);
  const reply = (
    body: string,
    lines: string[] = ['content-length', String(Buffer.byteLength(body))],
  ): void => {
    res.writeHead(200, ['x-path', req.url, ...lines]);
    res.end(Buffer.from(body));
  };
  if (req.url === '/slow') setTimeout(() => reply('slow'), 50);
  else if (req.url === '/slower') setTimeout(() => reply('slower'), 300);
  else if (req.url === '/echo') {
    const chunks: Buffer[] = [];
    req.body?.on('data', (c: Buffer) => chunks.push(c));
    req.body?.on('end', () => reply(Buffer.concat(chunks).toString()));
  } else if (req.url === '/chunked') {
    res.writeHead(200, []);
    res.write(Buffer.from('part one, '));
    res.end(Buffer.from('part two'));
  } else reply(`path ${req.url}`);
}

/** Sends `text` (in pieces, with pauses) and collects everything until the server closes or `until` matches. */
function exchange(
  port: number,
  pieces: string[],
  options: { until?: RegExp; end?: boolean; between?: (seen: string) => boolean } = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket: Socket = connect({ host: '127.0.0.1', port });
    let seen = '';
    let next = 0;
    const sendNext = (): void => {
      while (next < pieces.length) {
        if (next > 0 && options.between !== undefined && !options.between(seen)) return;
        socket.write(pieces[next++]!);
      }
      if (options.end === true) socket.end();
    };
    socket.on('connect', sendNext);
    socket.on('data', (c: Buffer) => {
      seen += c.toString('latin1');
      if (options.until?.test(seen)) {
        socket.destroy();
        resolve(seen);
      } else sendNext();
    });
    socket.on('close', () => resolve(seen));
    socket.on('error', reject);
  });
}

describe('proxy HTTP/1.1 server', () => {
  let server: ClientServer;
  let port: number;

  before(async () => {
    server = createClientServer({
      ...TEST_LIMITS,
      headersTimeoutMs: 300,
      requestTimeoutMs: 400,
      keepAliveTimeoutMs: 300,
      onRequest: handle,
      onUpgrade: (_req, socket) => socket.destroy(),
      onConnection: () => {},
    });
    await new Promise<void>((resolve) => server.server.listen({ host: '127.0.0.1', port: 0 }, resolve));
    port = (server.server.address() as AddressInfo).port;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(resolve));
  });

  it('answers pipelined requests in order, a slow one holding back those behind it', async () => {
    const reply = await exchange(
      port,
      [
        'GET /slow HTTP/1.1\r\nhost: x\r\n\r\nGET /a HTTP/1.1\r\nhost: x\r\n\r\n' +
          'POST /echo HTTP/1.1\r\nhost: x\r\ncontent-length: 4\r\n\r\nbodyGET /b HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n',
      ],
      {},
    );
    const paths = [...reply.matchAll(/x-path: (\S+)/g)].map((m) => m[1]);
    assert.deepEqual(paths, ['/slow', '/a', '/echo', '/b']);
    assert.match(reply, /\r\n\r\nbody/);
    assert.match(reply, /connection: close\r\n\r\npath \/b$/);
  });

  it('sends 100 Continue to a client that expects it, then reads the body', async () => {
    const reply = await exchange(
      port,
      [
        'POST /echo HTTP/1.1\r\nhost: x\r\nexpect: 100-continue\r\ncontent-length: 5\r\nconnection: close\r\n\r\n',
        'hello',
      ],
      { between: (seen) => seen.includes('100 Continue') },
    );
    assert.match(reply, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 OK\r\n/);
    assert.match(reply, /\r\n\r\nhello$/);
  });

  it('frames a response without a length as chunked for HTTP/1.1, close-delimited for HTTP/1.0', async () => {
    const chunked = await exchange(port, ['GET /chunked HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n']);
    assert.match(chunked, /transfer-encoding: chunked\r\n/);
    assert.match(chunked, /\r\n\r\na\r\npart one, \r\n8\r\npart two\r\n0\r\n\r\n$/);
    const old = await exchange(port, ['GET /chunked HTTP/1.0\r\n\r\n']);
    assert.doesNotMatch(old, /transfer-encoding/);
    assert.match(old, /connection: close\r\n/);
    assert.match(old, /\r\n\r\npart one, part two$/);
  });

  it('keeps an HTTP/1.0 connection that asks for it, and answers HEAD without a body', async () => {
    const reply = await exchange(
      port,
      [
        'GET /a HTTP/1.0\r\nconnection: keep-alive\r\n\r\nHEAD /chunked HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n',
      ],
      {},
    );
    assert.match(
      reply,
      /^HTTP\/1\.1 200 OK\r\n[\s\S]*connection: keep-alive\r\n\r\npath \/aHTTP\/1\.1 200 OK\r\n/,
    );
    assert.match(reply, /connection: close\r\n\r\n$/, 'the HEAD answer has no body');
    assert.doesNotMatch(reply, /part one/);
  });

  it('answers a client that half-closed after its request', async () => {
    const reply = await exchange(port, ['GET /slow HTTP/1.1\r\nhost: x\r\n\r\n'], { end: true });
    assert.match(reply, /^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\nslow$/);
  });

  it('answers every request a half-closed client sent in full, the last one closing', async () => {
    const reply = await exchange(
      port,
      ['GET /slow HTTP/1.1\r\nhost: x\r\n\r\nGET /b HTTP/1.1\r\nhost: x\r\n\r\nGET /c HTTP/1.1\r\nho'],
      { end: true },
    );
    const paths = [...reply.matchAll(/x-path: (\S+)/g)].map((m) => m[1]);
    assert.deepEqual(paths, ['/slow', '/b']);
    // The half request left is never answered: the connection closes after the last whole one.
    assert.match(reply, /connection: close\r\n\r\npath \/b$/);
  });

  it('drops the rest of an upload answered early, and serves the next request on the connection', async () => {
    const reply = await exchange(
      port,
      [
        'POST /early HTTP/1.1\r\nhost: x\r\ncontent-length: 10\r\n\r\n',
        '0123456789GET /after HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n',
      ],
      { between: (seen) => seen.includes('path /early') },
    );
    const paths = [...reply.matchAll(/x-path: (\S+)/g)].map((m) => m[1]);
    assert.deepEqual(paths, ['/early', '/after']);
  });

  it('closes a connection with a malformed chunked body without answering twice', async () => {
    const reply = await exchange(port, [
      'POST /echo HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\nzz\r\n',
    ]);
    // The handler had the request already; the bad body cuts the connection (no 400 after a 200, no crash).
    assert.doesNotMatch(reply, /HTTP\/1\.1 200/);
    const after = await exchange(port, ['GET /ok HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n']);
    assert.match(after, /path \/ok$/);
  });

  it('answers 408 to a request whose body does not arrive in time', async () => {
    const reply = await exchange(port, ['POST /echo HTTP/1.1\r\nhost: x\r\ncontent-length: 10\r\n\r\nabc']);
    assert.match(reply, /^HTTP\/1\.1 408 /);
  });

  it('closes an idle keep-alive connection after the keep-alive timeout', async () => {
    const started = Date.now();
    const reply = await exchange(port, ['GET /a HTTP/1.1\r\nhost: x\r\n\r\n']);
    assert.match(reply, /path \/a$/, 'closed after the answer, without another response');
    assert.ok(Date.now() - started >= 250, 'not before the keep-alive timeout');
  });

  it('closes idle connections on closeIdleConnections, letting a request in flight finish', async () => {
    const other = createClientServer({
      ...TEST_LIMITS,
      onRequest: handle,
      onUpgrade: (_req, socket) => socket.destroy(),
      onConnection: () => {},
    });
    await new Promise<void>((resolve) => other.server.listen({ host: '127.0.0.1', port: 0 }, resolve));
    const otherPort = (other.server.address() as AddressInfo).port;
    const idle = exchange(otherPort, ['GET /a HTTP/1.1\r\nhost: x\r\n\r\n']);
    const busy = exchange(otherPort, ['GET /slower HTTP/1.1\r\nhost: x\r\n\r\n']);
    while (!seenPaths.includes('/slower')) await new Promise((resolve) => setTimeout(resolve, 5));
    const closed = new Promise<void>((resolve) => other.close(resolve));
    other.closeIdleConnections();
    assert.match(await idle, /path \/a$/);
    const busyReply = await busy;
    assert.match(busyReply, /connection: close\r\n\r\nslower$/);
    await closed;
  });

  it('hands an upgrade its socket and the bytes after the head; the connection listeners stay', async () => {
    let closed = 0;
    const upgrades = createClientServer({
      ...TEST_LIMITS,
      onRequest: handle,
      onUpgrade: (req, socket, head) => {
        socket.write(`HTTP/1.1 101 Switching Protocols\r\nx-path: ${req.url}\r\n\r\n`);
        socket.write(head);
        socket.on('data', (c: Buffer) => socket.write(c));
        socket.on('end', () => socket.end());
      },
      onConnection: (socket) => socket.on('close', () => closed++),
    });
    await new Promise<void>((resolve) => upgrades.server.listen({ host: '127.0.0.1', port: 0 }, resolve));
    const upgradePort = (upgrades.server.address() as AddressInfo).port;
    const reply = await exchange(
      upgradePort,
      ['GET /ws HTTP/1.1\r\nhost: x\r\nconnection: upgrade\r\nupgrade: test\r\n\r\nearly ', 'later'],
      { between: (seen) => seen.includes('early'), end: true },
    );
    assert.equal(reply, 'HTTP/1.1 101 Switching Protocols\r\nx-path: /ws\r\n\r\nearly later');
    await new Promise<void>((resolve) => upgrades.close(resolve));
    assert.equal(closed, 1);
  });
});

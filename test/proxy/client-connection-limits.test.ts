// What a client cannot make the proxy's HTTP/1.1 server hold: answers to pipelined requests it does not read,
// sockets it does not close after a refusal or a closing answer, and bytes it sends while an upgrade is pending.
import assert from 'node:assert/strict';
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import { describe, it } from 'node:test';
import { ClientConnection } from '../../src/proxy/downstream/client-connection.js';
import type { ClientResponse } from '../../src/proxy/downstream/client-response.js';
import {
  type ClientServer,
  type ClientServerOptions,
  createClientServer,
} from '../../src/proxy/downstream/client-server.js';
import { TEST_LIMITS } from '../support/limits.js';

async function startServer(
  overrides: Partial<ClientServerOptions>,
): Promise<{ server: ClientServer; port: number; sockets: Socket[] }> {
  const sockets: Socket[] = [];
  const server = createClientServer({
    ...TEST_LIMITS,
    onRequest: (_req, res) => {
      res.writeHead(200, ['content-length', '2']);
      res.end(Buffer.from('ok'));
    },
    onUpgrade: (_req, socket) => socket.destroy(),
    onConnection: (socket) => sockets.push(socket),
    ...overrides,
  });
  await new Promise<void>((resolve) => server.server.listen({ host: '127.0.0.1', port: 0 }, resolve));
  return { server, port: (server.server.address() as AddressInfo).port, sockets };
}

async function stop(server: ClientServer): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(resolve));
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `read()` has not changed for `quietMs` (or `limit` is reached). */
async function settled(read: () => number, quietMs: number, limit: number): Promise<number> {
  let last = -1;
  while (read() !== last && read() < limit) {
    last = read();
    await sleep(quietMs);
  }
  return read();
}

describe('proxy HTTP/1.1 server limits', { timeout: 20_000 }, () => {
  for (const timing of ['at once', 'later'] as const) {
    it(`stops answering pipelined requests while the client does not read the answers (answered ${timing})`, async () => {
      let answered = 0;
      const body = Buffer.alloc(32 * 1024, 'x');
      const answer = (res: ClientResponse): void => {
        answered++;
        res.writeHead(200, ['content-length', String(body.length)]);
        res.end(body);
      };
      const { server, port, sockets } = await startServer({
        onRequest: (_req, res) => {
          if (timing === 'at once') answer(res);
          else setImmediate(answer, res);
        },
      });
      const total = 1000;
      const client = connect({ host: '127.0.0.1', port });
      // Never read: the answers pile up in the kernel's buffers, then the proxy must stop.
      client.pause();
      client.write('GET / HTTP/1.1\r\nhost: x\r\n\r\n'.repeat(total));
      const stalled = await settled(() => answered, 300, total);
      const buffered = sockets[0]!.writableLength;
      client.destroy();
      await stop(server);
      assert.ok(stalled < total / 2, `answered ${stalled} of ${total} requests nobody read`);
      assert.ok(buffered < 1024 * 1024, `${buffered} bytes buffered for the client`);
    });
  }

  it('answers the rest of the pipeline once the client reads again', async () => {
    const { server, port } = await startServer({
      onRequest: (_req, res) => {
        res.writeHead(200, ['content-length', String(16 * 1024)]);
        res.end(Buffer.alloc(16 * 1024, 'y'));
      },
    });
    const total = 400;
    const client = connect({ host: '127.0.0.1', port });
    client.pause();
    client.write('GET / HTTP/1.1\r\nhost: x\r\n\r\n'.repeat(total - 1));
    client.write('GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n');
    await sleep(200);
    let received = 0;
    client.on('data', (c: Buffer) => {
      received += c.length;
    });
    client.resume();
    await new Promise((resolve) => client.on('close', resolve));
    await stop(server);
    const each = `HTTP/1.1 200 OK\r\ncontent-length: 16384\r\n`.length;
    assert.ok(received > total * (16 * 1024 + each), `received only ${received} bytes`);
  });

  /** Opens a connection that never closes its side (half-open allowed), sends `data`, collects the answer. */
  const stubborn = (port: number, data: string): { answer: () => string; socket: Socket } => {
    const socket = connect({ host: '127.0.0.1', port, allowHalfOpen: true });
    let out = '';
    socket.setEncoding('latin1');
    socket.on('data', (c: string) => {
      out += c;
    });
    socket.on('error', () => {});
    socket.write(data);
    return { answer: () => out, socket };
  };

  for (const [what, data, status] of [
    ['a refused request', 'GET / HTTP/1.1\r\nHost : x\r\n\r\n', 400],
    ['an answer that closes the connection', 'GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n', 200],
    ['a head that never ends (slowloris)', 'GET / HTTP/1.1\r\nhost: x\r\n', 408],
  ] as const) {
    it(`frees the socket after ${what} though the client never closes`, async () => {
      let open = 0;
      let accepted = 0;
      const { server, port } = await startServer({
        headersTimeoutMs: 300,
        onConnection: (socket) => {
          accepted++;
          open++;
          socket.on('close', () => open--);
        },
      });
      const clients = Array.from({ length: 5 }, () => stubborn(port, data));
      try {
        // Every connection reached the server (however slowly a busy machine accepts them), and the server's
        // side of each closes by itself; the suite's timeout bounds both waits.
        while (accepted < 5) await sleep(10);
        while (open > 0) await sleep(20);
        for (const c of clients) assert.match(c.answer(), new RegExp(`^HTTP/1\\.1 ${status} `));
      } finally {
        for (const c of clients) c.socket.destroy();
        await stop(server);
      }
    });
  }

  it('closes (drains) once a client that keeps a refused connection open is let go', async () => {
    const { server, port } = await startServer({ headersTimeoutMs: 300 });
    const client = stubborn(port, 'GET / HTTP/1.1\r\nhost: x\r\n');
    await sleep(50);
    const closed = new Promise<void>((resolve) => server.close(resolve));
    server.closeIdleConnections();
    await closed;
    // The answer was written before the close; on a busy machine it may still be on its way to the client.
    for (let i = 0; i < 200 && client.answer() === ''; i++) await sleep(10);
    assert.match(client.answer(), /^HTTP\/1\.1 408 /);
    client.socket.destroy();
  });

  it("times a new connection's head from the accept, not from its first byte", async () => {
    // A connection driven by hand: the sweep runs on a clock this test sets.
    const host = {
      limits: { maxHeaderSize: 4096, maxHeadersCount: 50 },
      clock: 0,
      closing: false,
      onRequest: () => {},
      onUpgrade: () => {},
      forget: () => {},
    };
    let connection: ClientConnection | undefined;
    const server = createServer((socket) => {
      connection = new ClientConnection(socket, host);
    });
    await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
    const client = stubborn((server.address() as AddressInfo).port, '');
    while (connection === undefined) await sleep(10);
    // The first byte comes 900 ms after the accept; the head timeout is 1000 ms.
    host.clock = 900;
    client.socket.write('G');
    while (connection.idle) await sleep(10);
    host.clock = 1000;
    connection.sweep({
      headersTimeoutMs: 1000,
      requestTimeoutMs: 10_000,
      keepAliveTimeoutMs: 10_000,
      requestBodyIdleTimeoutMs: 10_000,
    });
    while (!client.answer().includes('\r\n\r\n')) await sleep(10);
    assert.match(client.answer(), /^HTTP\/1\.1 408 /);
    client.socket.destroy();
    connection.socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
});

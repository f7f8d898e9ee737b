// Forwarding edges of the proxy's own upstream client, end to end: an upstream that answers before reading
// the request body, chunked request bodies, and a client slower than the upstream.
import assert from 'node:assert/strict';
import { Agent, createServer, request, type Server } from 'node:http';
import { type AddressInfo, createServer as createNetServer, type Server as NetServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy, type Proxy as PorticoProxy } from '../../src/proxy/index.js';
import { forward, route, simpleFleet, upstream, vhost } from '../support/fleet.js';
import { closeServer, listen } from '../support/http.js';

function send(
  port: number,
  path: string,
  agent: Agent,
  body?: Buffer | Buffer[],
): Promise<{ status: number; framing: string; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: body ? 'POST' : 'GET',
        agent,
        headers: { host: 'example.com' },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            framing: String(res.headers['x-framing']),
            body: Buffer.concat(chunks),
          }),
        );
      },
    );
    req.on('error', reject);
    // An array: written as separate chunks without a content-length, so the request is chunked.
    if (Array.isArray(body)) {
      for (const part of body) req.write(part);
      req.end();
    } else req.end(body);
  });
}

describe('proxy forwarding through its own upstream client', () => {
  let proxy: PorticoProxy;
  let port: number;
  const servers: Server[] = [];
  let early: NetServer;

  before(async () => {
    // Answers 413 as soon as the head arrives and then stops reading: the proxy's upload backs up.
    early = createNetServer((socket) => {
      socket.once('data', () => {
        socket.write('HTTP/1.1 413 Payload Too Large\r\ncontent-length: 0\r\n\r\n');
        socket.pause();
      });
    });
    await new Promise<void>((resolve) => early.listen({ host: '127.0.0.1', port: 0 }, resolve));
    // Echoes the request body and how it was framed.
    const mirror = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        res.setHeader(
          'x-framing',
          req.headers['transfer-encoding'] ?? `length ${req.headers['content-length']}`,
        );
        res.end(Buffer.concat(chunks));
      });
    });
    // A large body in many writes, for a client that reads slowly.
    const large = createServer((_req, res) => {
      for (let i = 0; i < 64; i++) res.write(Buffer.alloc(64 * 1024, i));
      res.end();
    });
    servers.push(mirror, large);
    const upstreams = [
      upstream('default/early:80', [(early.address() as AddressInfo).port]),
      upstream('default/mirror:80', [await listen(mirror)]),
      upstream('default/large:80', [await listen(large)]),
    ];
    const config = simpleFleet(
      [
        vhost(80, 'example.com', [
          route(forward(['default/early:80']), { path: { type: 'PathPrefix', value: '/early' } }),
          route(forward(['default/large:80']), { path: { type: 'PathPrefix', value: '/large' } }),
          route(forward(['default/mirror:80'])),
        ]),
      ],
      upstreams,
    );
    proxy = createProxy({ bindAddress: '127.0.0.1', portMap: () => 0, log: discardingLogger });
    assert.deepEqual(await proxy.apply(config), { ok: true, listenerErrors: [] });
    port = proxy.addresses().find((a) => a.listener === 'port-80')!.port;
  });

  after(async () => {
    await proxy.close();
    await Promise.all(servers.map(closeServer));
    early.close();
  });

  it('relays an answer given before the upload was read, and the client can go on', {
    timeout: 10_000,
  }, async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const reply = await send(port, '/early', agent, Buffer.alloc(8 * 1024 * 1024, 1));
      assert.equal(reply.status, 413);
      // The client (one connection at most) is not left stuck behind the unread upload.
      assert.equal((await send(port, '/', agent)).status, 200);
    } finally {
      agent.destroy();
    }
  });

  it('re-frames a chunked request body as chunked toward the upstream', async () => {
    const agent = new Agent({ keepAlive: true });
    try {
      const parts = [Buffer.from('abc'), Buffer.from('defg')];
      const reply = await send(port, '/', agent, parts);
      assert.equal(reply.status, 200);
      assert.equal(reply.body.toString(), 'abcdefg');
      assert.equal(reply.framing, 'chunked');
    } finally {
      agent.destroy();
    }
  });

  it('streams a large response to a slow client intact, then serves the next request', {
    timeout: 10_000,
  }, async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const body = await new Promise<Buffer>((resolve, reject) => {
        const req = request(
          { host: '127.0.0.1', port, path: '/large', agent, headers: { host: 'example.com' } },
          (res) => {
            const chunks: Buffer[] = [];
            res.pause();
            // Read in small sips so the proxy meets backpressure.
            const sip = setInterval(() => {
              let c: Buffer | null = res.read(256 * 1024) as Buffer | null;
              while (c !== null) {
                chunks.push(c);
                c = res.read(256 * 1024) as Buffer | null;
              }
            }, 5);
            res.on('end', () => {
              clearInterval(sip);
              resolve(Buffer.concat(chunks));
            });
            res.on('readable', () => {});
          },
        );
        req.on('error', reject);
        req.end();
      });
      assert.equal(body.length, 64 * 64 * 1024);
      for (let i = 0; i < 64; i++) assert.equal(body[i * 64 * 1024], i);
      assert.equal((await send(port, '/large', agent)).body.length, 64 * 64 * 1024);
    } finally {
      agent.destroy();
    }
  });
});

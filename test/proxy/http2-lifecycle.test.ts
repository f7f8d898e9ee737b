// HTTP/2 across drain, config swaps and upstream GOAWAY: a stream in flight finishes when the proxy drains
// (GOAWAY, then the stream completes), when the config changes or its listener goes away, and the h2c pool
// drops a session its backend sent GOAWAY on and opens another when the backend's stream limit is reached.
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import {
  createServer as createH2Server,
  type Http2Server,
  type ServerHttp2Session,
  type ServerHttp2Stream,
} from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy, type InProcessProxy } from '../../src/proxy/proxy.js';
import { fleet, forward, listener, route, simpleFleet, upstream, vhost } from '../support/fleet.js';
import { h2Request, h2Session } from '../support/h2.js';
import { closeServer, freePort, startEcho, until } from '../support/http.js';

function h2c(name: string, ports: number[]) {
  const u = upstream(name, ports);
  u.cluster.protocol = 'h2c';
  return u;
}

/** An h2c backend that counts its sessions; `onStream` answers. */
async function h2Backend(
  options: { maxConcurrentStreams?: number },
  onStream: (session: ServerHttp2Session, n: number, answer: () => void) => void,
): Promise<{
  server: Http2Server;
  port: number;
  sessions: ServerHttp2Session[];
  streams: ServerHttp2Stream[];
}> {
  const server = createH2Server({ settings: { maxConcurrentStreams: options.maxConcurrentStreams ?? 100 } });
  const sessions: ServerHttp2Session[] = [];
  const streams: ServerHttp2Stream[] = [];
  let n = 0;
  server.on('session', (s) => sessions.push(s));
  server.on('stream', (stream) => {
    stream.on('error', () => {});
    streams.push(stream);
    const i = n++;
    onStream(stream.session as ServerHttp2Session, i, () => {
      if (stream.destroyed) return;
      stream.respond({ ':status': 200 });
      stream.end(`answer ${i}`);
    });
  });
  await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
  return { server, port: (server.address() as AddressInfo).port, sessions, streams };
}

describe('proxy HTTP/2 lifecycle', () => {
  let echo: Server;
  let echoPort: number;

  before(async () => {
    const e = await startEcho('pod-a');
    echo = e.server;
    echoPort = e.port;
  });

  after(async () => {
    await closeServer(echo);
  });

  function echoFleet(extraPath = '/') {
    return simpleFleet(
      [
        vhost(80, 'example.com', [
          route(forward(['echo-h2c']), { path: { type: 'PathPrefix', value: '/h2c' } }),
          route(forward(['echo']), { path: { type: 'PathPrefix', value: extraPath } }),
        ]),
      ],
      [upstream('echo', [echoPort]), h2c('echo-h2c', [echoPort])],
    );
  }

  it('drains with GOAWAY: the stream in flight completes, the session closes, accounting sees it', async () => {
    const proxy: InProcessProxy = createProxy({
      bindAddress: '127.0.0.1',
      portMap: () => 0,
      log: discardingLogger,
    });
    try {
      await proxy.apply(echoFleet());
      const port = proxy.addresses()[0]!.port;
      const session = await h2Session(`http://127.0.0.1:${port}`);
      const goaway = new Promise<number>((resolve) => session.once('goaway', (code) => resolve(code)));
      const closed = new Promise<void>((resolve) => session.once('close', () => resolve()));
      const slow = h2Request(session, '/slow?delay=600ms');
      const slowH2c = h2Request(session, '/h2c/slow?delay=600ms');
      await until(() => proxy.inFlight() === 2);
      const drained = proxy.drain({ drainMs: 0, maxMs: 5_000 });
      assert.equal(await goaway, 0);
      const [a, b] = await Promise.all([slow, slowH2c]);
      assert.deepEqual([a.status, a.rstCode, b.status, b.rstCode], [200, 0, 200, 0]);
      await closed;
      await drained;
      assert.equal(proxy.inFlight(), 0);
      assert.equal(proxy.ready, false);
    } finally {
      await proxy.close();
    }
  });

  it('never resets a stream on a config change, nor when its listener is removed', async () => {
    const proxy = createProxy({
      bindAddress: '127.0.0.1',
      portMap: () => 0,
      log: discardingLogger,
      maxDrainMs: 5_000,
    });
    try {
      await proxy.apply(echoFleet());
      const port = proxy.addresses()[0]!.port;
      const session = await h2Session(`http://127.0.0.1:${port}`);
      const inFlight = [h2Request(session, '/a?delay=500ms'), h2Request(session, '/h2c/a?delay=500ms')];
      await until(() => proxy.inFlight() === 2);
      // Another route set, then a config whose only listener is another port.
      await proxy.apply(echoFleet('/other'));
      const later = [
        h2Request(session, '/other?delay=300ms'),
        h2Request(session, '/h2c/b?delay=300ms', { method: 'POST', body: 'y' }),
      ];
      await until(() => proxy.inFlight() === 4);
      // Nor when the endpoints go: both upstream pools of the echo close, gracefully.
      const moved = vhost(8080, 'example.com', [route(forward(['elsewhere']))]);
      const outcome = await proxy.apply(
        fleet([{ listener: listener(8080), vhosts: [moved] }], [upstream('elsewhere', [await freePort()])]),
      );
      assert.equal(outcome.ok, true);
      for (const reply of await Promise.all([...inFlight, ...later])) {
        assert.deepEqual([reply.status, reply.rstCode], [200, 0]);
      }
      session.close();
    } finally {
      await proxy.close();
    }
  });

  it('drops an upstream session that sent GOAWAY and serves the next request on a new one', async () => {
    const backend = await h2Backend({}, (session, n, answer) => {
      answer();
      // After its first answer, the backend asks the proxy to go elsewhere.
      if (n === 0) session.goaway(0, 1);
    });
    const proxy = createProxy({ bindAddress: '127.0.0.1', portMap: () => 0, log: discardingLogger });
    try {
      await proxy.apply(
        simpleFleet([vhost(80, 'example.com', [route(forward(['be']))])], [h2c('be', [backend.port])]),
      );
      const port = proxy.addresses()[0]!.port;
      const session = await h2Session(`http://127.0.0.1:${port}`);
      const first = await h2Request(session, '/1');
      assert.deepEqual([first.status, first.body], [200, 'answer 0']);
      await new Promise((resolve) => setTimeout(resolve, 50));
      for (let i = 1; i <= 3; i++) {
        const next = await h2Request(session, `/${i + 1}`);
        assert.deepEqual([next.status, next.body], [200, `answer ${i}`]);
      }
      assert.equal(backend.sessions.length, 2);
      session.close();
    } finally {
      await proxy.close();
      backend.server.close();
    }
  });

  it("opens another upstream session when the backend's stream limit is reached", async () => {
    const waiting: (() => void)[] = [];
    const backend = await h2Backend({ maxConcurrentStreams: 2 }, (_session, _n, answer) => {
      waiting.push(answer);
    });
    const proxy = createProxy({ bindAddress: '127.0.0.1', portMap: () => 0, log: discardingLogger });
    try {
      await proxy.apply(
        simpleFleet([vhost(80, 'example.com', [route(forward(['be']))])], [h2c('be', [backend.port])]),
      );
      const port = proxy.addresses()[0]!.port;
      const session = await h2Session(`http://127.0.0.1:${port}`);
      // The first request lets the pool learn the backend's SETTINGS.
      const warm = h2Request(session, '/warm');
      await until(() => waiting.length === 1);
      waiting.shift()!();
      await warm;
      const replies = Array.from({ length: 5 }, (_, i) => h2Request(session, `/${i}`));
      await until(() => waiting.length === 5);
      for (const answer of waiting.splice(0)) answer();
      for (const reply of await Promise.all(replies)) assert.equal(reply.status, 200);
      assert.equal(backend.sessions.length, 3);
      session.close();
    } finally {
      await proxy.close();
      backend.server.close();
    }
  });

  it('passes an h2c backend that dies mid-response on as a reset stream, never as a short complete one', async () => {
    const backend = await h2Backend({}, (session, _n, _answer) => {
      // A head and part of the body, then the backend's connection goes.
      const stream = [...backend.streams].pop()!;
      stream.respond({ ':status': 200 });
      stream.write('partial');
      setTimeout(() => session.destroy(), 50);
    });
    const proxy = createProxy({ bindAddress: '127.0.0.1', portMap: () => 0, log: discardingLogger });
    try {
      await proxy.apply(
        simpleFleet([vhost(80, 'example.com', [route(forward(['be']))])], [h2c('be', [backend.port])]),
      );
      const port = proxy.addresses()[0]!.port;
      const session = await h2Session(`http://127.0.0.1:${port}`);
      const reply = await h2Request(session, '/cut');
      assert.equal(reply.status, 200);
      assert.notEqual(reply.rstCode, 0, `a clean end after ${JSON.stringify(reply.body)}`);
      session.close();
    } finally {
      await proxy.close();
      backend.server.close();
    }
  });
});

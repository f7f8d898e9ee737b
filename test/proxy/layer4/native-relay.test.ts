// A TCP listener's byte path through a real proxy, on each relay (the native thread of native/relay.c, and Node's
// sockets): every byte in order to a client that stops reading long enough for the relay to hold bytes it could
// not send (the native relay's partial writes), a half-close each way, a backend's reset reaching the client as a
// reset, a backend that refuses the connection, and more connections at once than the native relay's first table;
// on the native relay, a client reset during the backend connect, a closed listener's port free at once, and a
// flood while the JavaScript thread is blocked taking no more than the relay's bound of descriptors.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { readdirSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { after, describe, it } from 'node:test';
import { discardingLogger } from '../../../src/platform/log-line.js';
import { createProxy, type Proxy as PorticoProxy, type ProxyOptionsInput } from '../../../src/proxy/index.js';
import { nativeRelay, nativeRelayLoads } from '../../../src/proxy/layer4/native-relay.js';
import { fleet, forward, route, vhost } from '../../support/fleet.js';
import { closedPort, listen, readAll, sha256 } from './loopback.js';

const WITHIN = { timeout: 60_000 };
const proxies: PorticoProxy[] = [];
after(async () => {
  for (const p of proxies) await p.close();
});

type LogLine = Record<string, string | number>;

/** A proxy with one TCP listener to `backendPort` on `relay`; its port and its access log lines. */
async function startProxy(backendPort: number, relay: 'native' | 'node', options: ProxyOptionsInput = {}) {
  const lines: LogLine[] = [];
  const proxy = createProxy({
    ...options,
    bindAddress: '127.0.0.1',
    portMap: () => 0,
    log: discardingLogger,
    layer4Relay: relay,
    accessLog: {
      format: 'json',
      fields: ['listener', 'bytes_received', 'bytes_sent', 'response_flags', 'upstream_host'],
      sampling: 1,
      flushIntervalMs: 10,
      write: (text) => {
        for (const line of text.split('\n')) if (line !== '') lines.push(JSON.parse(line) as LogLine);
      },
    },
  });
  proxies.push(proxy);
  const config = fleet(
    [
      {
        listener: {
          name: 'port-9000',
          port: 9000,
          protocol: 'TCP',
          gatewayListeners: [{ gateway: 'default/eg', listener: 'tcp' }],
        },
        vhosts: [vhost(9000, '*', [route(forward(['backend']))])],
      },
    ],
    [
      {
        cluster: {
          name: 'backend',
          service: { namespace: 'default', name: 'backend', port: backendPort },
          protocol: 'tcp',
        },
        endpoints: { name: 'backend', endpoints: [{ address: '127.0.0.1', port: backendPort }] },
      },
    ],
  );
  assert.deepEqual(await proxy.apply(config), { ok: true, listenerErrors: [] });
  const port = proxy.addresses().find((a) => a.listener === 'port-9000')!.port;
  /** The first access log line that `match` takes, once it was written. */
  const line = async (match: (l: LogLine) => boolean): Promise<LogLine> => {
    for (;;) {
      const found = lines.find(match);
      if (found !== undefined) return found;
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  return { port, line };
}

/** A backend that answers no connect: a process that stops accepting with its one-slot queue full. */
async function unansweringPort(): Promise<number> {
  const child = spawn(
    process.execPath,
    [
      '-e',
      `const s = require('node:net').createServer();
       s.listen({ host: '127.0.0.1', port: 0, backlog: 1 }, () => {
         // Written at once (a pipe is synchronous on Linux); then it never accepts again.
         console.log(s.address().port);
         for (;;);
       });`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  after(() => child.kill('SIGKILL'));
  const [line] = (await once(child.stdout, 'data')) as [Buffer];
  const port = Number(line.toString().trim());
  // Connections the kernel completes into the queue until it is full; they are never accepted.
  for (let queued = 0; queued < 3; queued++) {
    const filler = connect({ host: '127.0.0.1', port });
    filler.on('error', () => {});
    after(() => filler.destroy());
    const done = await Promise.race([
      once(filler, 'connect').then(() => false),
      new Promise<boolean>((r) => setTimeout(() => r(true), 1000)),
    ]);
    if (done) break;
  }
  return port;
}

it('the native relay loads where the build made it (Linux)', () => {
  const loads = nativeRelayLoads();
  assert.equal(loads, true, `the native relay does not load: ${String(loads)}`);
});

for (const relay of ['native', 'node'] as const) {
  describe(`a TCP listener's bytes, ${relay} relay`, WITHIN, () => {
    for (const pieces of [512, 0]) {
      const shape = pieces > 0 ? `written in ${pieces}-byte pieces` : 'written at once';
      it(`delivers every byte in order (${shape}) to a client that stops reading for a while`, async () => {
        // At once, 24 MiB is more than the sockets' buffers between backend and client hold: the relay holds the
        // rest, a partial write at a time. In pieces, the relay reads small chunks between its partial writes.
        const payload = randomBytes(pieces > 0 ? 8 * 1024 * 1024 : 24 * 1024 * 1024);
        let stalled: () => void = () => {};
        const backendStalled = new Promise<void>((r) => {
          stalled = r;
        });
        const backendPort = await listen((socket) => {
          socket.resume();
          if (pieces === 0) {
            if (!socket.write(payload)) stalled();
            socket.end();
            return;
          }
          let at = 0;
          const next = () => {
            if (at >= payload.length) {
              // The kernel's buffers took it all (they grow on a fast loopback): the relay may have held nothing.
              stalled();
              socket.end();
              return;
            }
            const more = socket.write(payload.subarray(at, at + pieces));
            at += pieces;
            // Backpressure all the way back to the backend: the relay holds what it could not send.
            if (!more) {
              stalled();
              socket.once('drain', next);
            } else setImmediate(next);
          };
          next();
        });
        const proxy = await startProxy(backendPort, relay);
        const client = connect({ host: '127.0.0.1', port: proxy.port, allowHalfOpen: true });
        client.pause();
        await backendStalled;
        const received = readAll(client);
        client.resume();
        client.end();
        const got = await received;
        assert.equal(got.length, payload.length);
        assert.equal(sha256(got), sha256(payload), 'bytes changed or reordered on the way');
        const logged = await proxy.line((l) => l.bytes_sent === payload.length);
        assert.equal(logged.response_flags, undefined);
      });
    }

    it('relays a half-close each way: the other direction keeps flowing until it ends too', async () => {
      const backendPort = await listen((socket) => {
        const request: Buffer[] = [];
        socket.on('data', (c: Buffer) => request.push(c));
        // The answer comes after the client's FIN reached the backend: so the client's half-close went through.
        socket.on('end', () => socket.end(`got ${Buffer.concat(request).toString()}`));
      });
      const proxy = await startProxy(backendPort, relay);
      const client = connect({ host: '127.0.0.1', port: proxy.port, allowHalfOpen: true });
      const answer = readAll(client);
      client.end('hello');
      assert.equal((await answer).toString(), 'got hello');
      client.destroy();
      const logged = await proxy.line((l) => l.bytes_received === 5);
      assert.equal(logged.bytes_sent, 'got hello'.length);
      assert.equal(logged.response_flags, undefined);
    });

    it("passes a backend's reset on to the client as a reset, and logs the upstream's failure", async () => {
      let backendSocket: Socket | undefined;
      const backendPort = await listen((socket) => {
        backendSocket = socket;
        socket.write('ready');
      });
      const proxy = await startProxy(backendPort, relay);
      const client = connect({ host: '127.0.0.1', port: proxy.port, allowHalfOpen: true });
      await once(client, 'data');
      const failed = new Promise<string | undefined>((resolve) => {
        client.once('error', (error: NodeJS.ErrnoException) => resolve(error.code));
        client.once('end', () => resolve('end'));
      });
      backendSocket!.resetAndDestroy();
      assert.equal(await failed, 'ECONNRESET');
      const logged = await proxy.line((l) => l.response_flags !== undefined);
      assert.equal(logged.response_flags, 'upstream_reset');
    });

    it('closes the client of a backend that refuses the connection, and logs a connect failure', async () => {
      const refusing = await closedPort();
      const proxy = await startProxy(refusing, relay);
      const client = connect({ host: '127.0.0.1', port: proxy.port });
      client.on('error', () => {});
      await once(client, 'close');
      const logged = await proxy.line(() => true);
      assert.equal(logged.response_flags, 'upstream_connect_failure');
      assert.equal(logged.upstream_host, `127.0.0.1:${refusing}`);
    });

    it('ends a connection whose client resets while its backend has not answered the connect yet', async () => {
      const port = await unansweringPort();
      // A connect timeout far beyond the test's wait: the end must come from the client's reset, not from it.
      const proxy = await startProxy(port, relay, { upstreamConnectTimeoutMs: 30_000 });
      const client = connect({ host: '127.0.0.1', port: proxy.port });
      client.on('error', () => {});
      await once(client, 'connect');
      client.resetAndDestroy();
      const logged = await proxy.line(() => true);
      assert.equal(logged.response_flags, 'client_disconnect');
    });

    it('serves 1,500 connections open at once, each its own bytes', async () => {
      const backendPort = await listen((socket) => socket.pipe(socket));
      const proxy = await startProxy(backendPort, relay);
      const clients = await Promise.all(
        Array.from({ length: 1500 }, async () => {
          const client = connect({ host: '127.0.0.1', port: proxy.port });
          await once(client, 'connect');
          return client;
        }),
      );
      const answers = await Promise.all(
        clients.map(async (client, i) => {
          const text = `connection ${i}\n`;
          let got = '';
          client.setEncoding('utf8');
          client.write(text);
          for await (const chunk of client) {
            got += chunk as string;
            if (got.length >= text.length) break;
          }
          return got === text;
        }),
      );
      assert.equal(answers.filter((ok) => !ok).length, 0, 'a connection got bytes not its own');
      for (const client of clients) client.destroy();
    });
  });
}

it('a listener closed on the native relay frees its port at once: the next bind of that port succeeds', async () => {
  const relay = nativeRelay(10_000, discardingLogger);
  assert.ok(!(relay instanceof Error), String(relay));
  const accepting = { accepted: () => ({ peeked() {}, closed() {}, released() {} }), acceptFailed() {} };
  const options = { reusePort: false, peek: false };
  const first = relay.listen('127.0.0.1', 0, options, accepting);
  relay.closeListener(first.id);
  // No wait between the two: Node's own server.close frees the port before it returns, and so must this.
  const again = relay.listen('127.0.0.1', first.port, options, accepting);
  assert.equal(again.port, first.port);
  relay.closeListener(again.id);
});

it('accepts no more than 1,024 connections the JavaScript thread has not heard of while it is busy', async () => {
  const proxy = await startProxy(await closedPort(), 'native');
  const held = () => readdirSync('/proc/self/fd').length;
  const before = held();
  // Another process floods the listener while this thread is blocked, and counts this process's descriptors
  // then: only the relay's thread is running here to accept them.
  const flood = spawn(
    process.execPath,
    [
      '-e',
      `const net = require('node:net');
       const [port, pid] = process.argv.slice(1);
       process.stdin.once('data', () => {
         let connected = 0;
         for (let i = 0; i < 2500; i++)
           net.connect({ host: '127.0.0.1', port: Number(port) }, () => connected++).on('error', () => {});
         // Counted once no connection has completed for half a second: the relay took all it would.
         let seen = -1;
         const settled = setInterval(() => {
           if (connected !== seen) {
             seen = connected;
             return;
           }
           clearInterval(settled);
           console.log(require('node:fs').readdirSync('/proc/' + pid + '/fd').length);
         }, 500);
       });
       console.log('ready');`,
      String(proxy.port),
      String(process.pid),
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  after(() => flood.kill('SIGKILL'));
  flood.stdout.setEncoding('utf8');
  const lines = flood.stdout[Symbol.asyncIterator]();
  assert.equal(String((await lines.next()).value).trim(), 'ready');
  flood.stdin.write('go\n');
  // Blocked well past the flood's count (about a second after it starts, longer on a busy machine): the relay
  // alone runs in this process meanwhile.
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10_000);
  const counted = Number(String((await lines.next()).value).trim());
  assert.ok(counted > before, `the flood's count read: ${counted}`);
  assert.ok(
    counted - before <= 1024 + 64,
    `${counted - before} descriptors taken while JavaScript was blocked`,
  );
});

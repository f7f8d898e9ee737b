// The layer-4 relay over real loopback sockets, both ways it reads an upstream (net's `onread` into a reused
// buffer, and the stream's `data`): every byte arrives, in order, when the client stops reading long enough for
// the relay to hold bytes it cannot write (the case where a reused read buffer could be overwritten); what it
// holds stays bounded; a half-close goes through and the other direction keeps flowing; a reset cuts both.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { describe, it } from 'node:test';
import { directReads, type RelayEnd, relay } from '../../../src/proxy/layer4/relay.js';
import { listen, readAll, sha256 } from './loopback.js';

const WITHIN = { timeout: 60_000 };

/** What the relay's side of a client connection saw: its end, and the most it held unwritten for the client. */
interface RelayView {
  ended: Promise<RelayEnd>;
  held: () => number;
  /** The relay's client socket once a client connected. */
  socket: Promise<Socket>;
}

/** A relay on loopback to `backendPort`: upstream reads by `onread` (direct) or by `data` events. */
async function startRelay(backendPort: number, direct: boolean): Promise<{ port: number; view: RelayView }> {
  let resolveEnd: (end: RelayEnd) => void = () => {};
  let resolveSocket: (s: Socket) => void = () => {};
  let held = 0;
  const view: RelayView = {
    ended: new Promise((r) => {
      resolveEnd = r;
    }),
    socket: new Promise((r) => {
      resolveSocket = r;
    }),
    held: () => held,
  };
  const port = await listen((client) => {
    // The test's own measure of the relay's buffering: the client socket's unwritten bytes after each write.
    const write = client.write.bind(client) as (chunk: Buffer) => boolean;
    client.write = ((chunk: Buffer) => {
      const more = write(chunk);
      held = Math.max(held, client.writableLength);
      return more;
    }) as typeof client.write;
    const upstream = connect({
      host: '127.0.0.1',
      port: backendPort,
      allowHalfOpen: true,
      ...(direct ? { onread: directReads(client) } : {}),
    });
    relay(client, upstream, resolveEnd);
    resolveSocket(client);
  });
  return { port, view };
}

for (const direct of [true, false]) {
  const mode = direct ? 'upstream read into a reused buffer' : 'upstream read as stream data';
  describe(`layer-4 relay, ${mode}`, WITHIN, () => {
    // In pieces: a write the kernel could not take at once is followed by more small reads, which must not land
    // in the memory that write still holds. In bulk: reads the size of the buffer.
    for (const pieces of [512, 0]) {
      const shape = pieces > 0 ? `written in ${pieces}-byte pieces` : 'written at once';
      it(`delivers every byte in order (${shape}) to a client that stops reading, holding a bounded amount`, async () => {
        const payload = randomBytes(pieces > 0 ? 8 * 1024 * 1024 : 24 * 1024 * 1024);
        const backendPort = await listen((socket) => {
          socket.resume();
          if (pieces === 0) {
            socket.end(payload);
            return;
          }
          let at = 0;
          const next = () => {
            if (at >= payload.length) socket.end();
            else {
              socket.write(payload.subarray(at, at + pieces));
              at += pieces;
              setImmediate(next);
            }
          };
          next();
        });
        const { port, view } = await startRelay(backendPort, direct);
        const client = connect({ host: '127.0.0.1', port, allowHalfOpen: true });
        client.pause();
        const relayed = await view.socket;
        // Not read until the relay holds bytes it could not hand to the kernel: the socket buffers are full.
        while (relayed.writableLength === 0) await new Promise((r) => setTimeout(r, 5));
        const received = readAll(client);
        client.resume();
        client.end();
        const got = await received;
        assert.equal(got.length, payload.length);
        assert.equal(sha256(got), sha256(payload), 'bytes changed or reordered on the way');
        const bound = relayed.writableHighWaterMark + 64 * 1024;
        assert.ok(view.held() <= bound, `held ${view.held()} bytes unwritten, more than ${bound}`);
        assert.equal((await view.ended).error, undefined);
      });
    }

    it('relays a half-close each way: the other direction keeps flowing until it ends too', async () => {
      const backendPort = await listen((socket) => {
        const request: Buffer[] = [];
        socket.on('data', (c: Buffer) => request.push(c));
        // The answer comes after the client's FIN reached the backend: so the client's half-close went through.
        socket.on('end', () => socket.end(`got ${Buffer.concat(request).toString()}`));
      });
      const { port, view } = await startRelay(backendPort, direct);
      const client = connect({ host: '127.0.0.1', port, allowHalfOpen: true });
      const answer = readAll(client);
      client.end('hello');
      assert.equal((await answer).toString(), 'got hello');
      client.destroy();
      const end = await view.ended;
      assert.equal(end.error, undefined);
    });

    it('cuts both sides when one resets, passes the reset on, and tells which side failed', async () => {
      let backendSocket: Socket | undefined;
      const backendPort = await listen((socket) => {
        backendSocket = socket;
        socket.write('ready');
      });
      const { port, view } = await startRelay(backendPort, direct);
      const client = connect({ host: '127.0.0.1', port, allowHalfOpen: true });
      await once(client, 'data');
      const clientFailed = new Promise<string | undefined>((resolve) => {
        client.once('error', (error: NodeJS.ErrnoException) => resolve(error.code));
        client.once('end', () => resolve('end'));
      });
      backendSocket!.resetAndDestroy();
      const end = await view.ended;
      assert.equal(end.failed, 'upstream');
      assert.equal(await clientFailed, 'ECONNRESET');
      client.destroy();
    });
  });
}

// HTTP/2 hardening with real sockets: a rapid-reset flood (client RST_STREAM), a "MadeYouReset" flood (streams
// the server resets over the client's own errors), oversized header lists and CR/LF or NUL in header values.
// After each, another client is still served.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { type ClientHttp2Session, constants } from 'node:http2';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createLogger } from '../../src/platform/log-line.js';
import { createProxy, type Proxy as PorticoProxy } from '../../src/proxy/index.js';
import { forward, route, simpleFleet, upstream, vhost } from '../support/fleet.js';
import { h2Request, h2Session } from '../support/h2.js';
import {
  CONTINUATION,
  DATA,
  END_HEADERS,
  END_STREAM,
  frame,
  goawayCode,
  HEADERS,
  PING,
  PREFACE,
  RST_STREAM,
  rawH2,
  requestBlock,
  SETTINGS,
} from '../support/h2-frames.js';
import { closeServer, type EchoBody, listen, startEcho } from '../support/http.js';

const RESETS_ALLOWED = 50;

describe('proxy HTTP/2 hardening', () => {
  let proxy: PorticoProxy;
  let port: number;
  let echo: Server;
  let firehose: Server;
  let firehoseWritten = 0;
  const logs: string[] = [];

  before(async () => {
    const e = await startEcho('pod-a');
    echo = e.server;
    // Writes up to 200 MB as fast as its reader takes it, counting what it got rid of.
    firehose = createServer((_req, res) => {
      const chunk = Buffer.alloc(64 * 1024, 1);
      const pump = (): void => {
        while (firehoseWritten < 200 * 1024 * 1024) {
          firehoseWritten += chunk.length;
          if (!res.write(chunk)) {
            res.once('drain', pump);
            return;
          }
        }
        res.end();
      };
      pump();
    });
    const firehosePort = await listen(firehose);
    proxy = createProxy({
      bindAddress: '127.0.0.1',
      portMap: () => 0,
      log: createLogger('debug', (line) => logs.push(line)),
      limits: { requestBodyIdleTimeoutMs: 300 },
      http2: { maxStreamResetsPerWindow: RESETS_ALLOWED, streamResetWindowMs: 60_000 },
    });
    await proxy.apply(
      simpleFleet(
        [
          vhost(80, 'example.com', [
            route(forward(['firehose']), { path: { type: 'PathPrefix', value: '/firehose' } }),
            route(forward(['echo'])),
          ]),
        ],
        [upstream('echo', [e.port]), upstream('firehose', [firehosePort])],
      ),
    );
    port = proxy.addresses()[0]!.port;
  });

  after(async () => {
    await proxy.close();
    await closeServer(echo);
    await closeServer(firehose);
  });

  /** A fresh client is answered: the proxy still serves others. */
  async function othersServed(): Promise<void> {
    const other = await h2Session(`http://127.0.0.1:${port}`);
    try {
      assert.equal((await h2Request(other, '/still-here')).status, 200);
    } finally {
      other.close();
    }
  }

  it('closes a connection that resets streams faster than its bound (rapid reset) with ENHANCE_YOUR_CALM', async () => {
    const attacker: ClientHttp2Session = await h2Session(`http://127.0.0.1:${port}`);
    attacker.on('error', () => {});
    const goaway = new Promise<number>((resolve) => attacker.once('goaway', (code) => resolve(code)));
    let opened = 0;
    for (let i = 0; i < 10 * RESETS_ALLOWED && !attacker.destroyed && !attacker.closed; i++) {
      try {
        const stream = attacker.request({ ':path': '/?delay=2s', ':authority': 'example.com' });
        stream.on('error', () => {});
        stream.close(constants.NGHTTP2_CANCEL);
        opened++;
      } catch {
        break;
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
    assert.equal(await goaway, constants.NGHTTP2_ENHANCE_YOUR_CALM);
    assert.ok(opened < 10 * RESETS_ALLOWED, `the proxy took all ${opened} resets`);
    assert.ok(logs.some((l) => l.includes('too many stream resets')));
    await othersServed();
  });

  it('closes a connection whose errors make the proxy reset its streams (MadeYouReset)', async () => {
    const { socket, frames, closed } = await rawH2(port);
    // Each stream says content-length 1 and sends 5 bytes: the server must reset it (PROTOCOL_ERROR).
    for (let i = 0; i < 4 * RESETS_ALLOWED && !socket.destroyed; i++) {
      const id = 2 * i + 1;
      socket.write(
        Buffer.concat([
          frame(HEADERS, END_HEADERS, id, requestBlock('/?delay=2s', 'example.com', 1)),
          frame(DATA, END_STREAM, id, Buffer.from('hello')),
        ]),
      );
      await new Promise((resolve) => setImmediate(resolve));
    }
    await closed;
    const resets = frames.filter((f) => f.type === RST_STREAM).length;
    // The connection goes after at most the bound. Node 20 (nghttp2 1.61) resets each stream and leaves the
    // bound to the proxy (ENHANCE_YOUR_CALM); Nodes 24 and 26 end the connection at the first such error
    // themselves (GOAWAY INTERNAL_ERROR, no stream reset).
    // A few more may be in the bytes already read when it trips.
    assert.ok(resets <= RESETS_ALLOWED + 10, `${resets} streams were reset before the connection went`);
    const code = goawayCode(frames);
    assert.notEqual(code, undefined);
    if (resets > 1) assert.equal(code, constants.NGHTTP2_ENHANCE_YOUR_CALM);
    await othersServed();
  });

  it('refuses a header list over its limit with 431, before anything reaches the backend', async () => {
    const session = await h2Session(`http://127.0.0.1:${port}`);
    try {
      const big = await h2Request(session, '/big', { headers: { 'x-big': 'x'.repeat(20_000) } });
      assert.equal(big.status === 431 || big.rstCode !== 0, true, `answered ${big.status}`);
      assert.notEqual(big.status, 200);
      const many = await h2Request(session, '/many', {
        headers: Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`x-h${i}`, 'v'])),
      });
      assert.notEqual(many.status, 200);
    } finally {
      session.destroy();
    }
    await othersServed();
  });

  it('never forwards CR, LF or NUL from an h2 header value to an HTTP/1.1 backend', async () => {
    const session = await h2Session(`http://127.0.0.1:${port}`);
    session.on('error', () => {});
    try {
      const crlf = await h2Request(session, '/crlf', { headers: { 'x-bad': 'a\r\nx-injected: 1' } });
      if (crlf.status === 200) {
        // nghttp2 drops such a field: the backend must see neither it nor what it tried to inject.
        const seen = (JSON.parse(crlf.body) as EchoBody).headers;
        assert.equal(seen['X-Injected'], undefined);
        assert.equal(seen['X-Bad'], undefined);
      } else assert.notEqual(crlf.rstCode, 0);
      const nul = await h2Request(session, '/nul', { headers: { 'x-bad': 'a\u0000b' } });
      assert.notEqual(nul.status, 200);
    } finally {
      session.destroy();
    }
    await othersServed();
  });

  it('refuses a :path that is not visible ASCII with 400, as the HTTP/1.1 front refuses such a target', async () => {
    const session = await h2Session(`http://127.0.0.1:${port}`);
    session.on('error', () => {});
    try {
      // Latin-1 bytes on the wire (0xef, 0x85): written raw into an HTTP/1.1 request line, they are not one.
      for (const path of ['/na\u00efve', '/nel\u0085']) {
        const reply = await h2Request(session, path);
        assert.equal(reply.status, 400, `${JSON.stringify(path)}: ${reply.body}`);
      }
      // A space is nghttp2's to refuse: it resets the stream before the proxy sees it.
      assert.notEqual((await h2Request(session, '/sp ace')).rstCode, 0);
      assert.equal((await h2Request(session, '/na%C3%AFve')).status, 200, 'percent-encoded, it passes');
    } finally {
      session.destroy();
    }
    await othersServed();
  });

  it('answers 408 to an upload that stalls, and resets its stream', async () => {
    const session = await h2Session(`http://127.0.0.1:${port}`);
    try {
      const reply = await new Promise<{ status: number; rstCode: number }>((resolve) => {
        const stream = session.request({
          ':method': 'POST',
          ':path': '/upload',
          ':authority': 'example.com',
        });
        let status = 0;
        stream.on('response', (h) => {
          status = Number(h[':status']);
        });
        stream.on('error', () => {});
        stream.resume();
        stream.on('close', () => resolve({ status, rstCode: stream.rstCode ?? 0 }));
        // A first byte, then nothing.
        stream.write('a');
      });
      assert.equal(reply.status, 408);
    } finally {
      session.close();
    }
    await othersServed();
  });

  for (const [name, flood] of [
    ['PING', frame(PING, 0, 0, Buffer.alloc(8))],
    ['SETTINGS', frame(SETTINGS, 0, 0)],
  ] as const) {
    it(`ends the connection of a client that floods ${name} frames without reading the acknowledgements`, async () => {
      const socket = connect({ host: '127.0.0.1', port });
      await new Promise((resolve) => socket.once('connect', resolve));
      // Never read: the proxy's acknowledgements back up (nghttp2 bounds that queue).
      socket.pause();
      let closed = false;
      socket.on('close', () => {
        closed = true;
      });
      socket.on('error', () => {});
      socket.write(Buffer.concat([PREFACE, frame(SETTINGS, 0, 0)]));
      const batch = Buffer.concat(Array.from({ length: 1000 }, () => flood));
      let sent = 0;
      while (!closed && sent < 1_000_000) {
        if (!socket.write(batch)) {
          await new Promise((resolve) => {
            socket.once('drain', resolve);
            setTimeout(resolve, 100);
          });
        }
        sent += 1000;
        await new Promise((resolve) => setImmediate(resolve));
      }
      assert.ok(closed, `still open after ${sent} ${name} frames`);
      socket.destroy();
      await othersServed();
    });
  }

  it('ends the connection of a client that sends a CONTINUATION flood', async () => {
    const { socket, frames, closed } = await rawH2(port);
    // A header block that never ends: HEADERS without END_HEADERS, then CONTINUATION frames.
    socket.write(frame(HEADERS, 0, 1, requestBlock('/', 'example.com')));
    const piece = frame(CONTINUATION, 0, 1, Buffer.from([0x40, 1, 0x78, 1, 0x79]));
    for (let i = 0; i < 10_000 && !socket.destroyed; i++) {
      socket.write(piece);
      if (i % 100 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    await closed;
    assert.notEqual(goawayCode(frames), undefined);
    await othersServed();
  });

  it('holds a bounded amount for a client that stops reading a large response (flow control)', async () => {
    const session = await h2Session(`http://127.0.0.1:${port}`);
    session.on('error', () => {});
    try {
      const stream = session.request({ ':path': '/firehose', ':authority': 'example.com' });
      stream.on('error', () => {});
      // Reads the first bytes, then nothing: no WINDOW_UPDATE goes back, the proxy must stop reading upstream.
      await new Promise((resolve) => stream.once('data', resolve));
      stream.pause();
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const stalled = firehoseWritten;
      await new Promise((resolve) => setTimeout(resolve, 500));
      assert.ok(stalled < 32 * 1024 * 1024, `the backend got rid of ${stalled} bytes`);
      assert.equal(firehoseWritten, stalled, 'the backend kept writing');
      await othersServed();
    } finally {
      session.destroy();
    }
  });
});

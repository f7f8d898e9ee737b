// How HTTP/2 streams end under a hostile client, one stream at a time: a reset (CANCEL or NO_ERROR) on a stream
// whose writes the proxy queued because the client stopped reading it, a route timeout that fires while such a
// write waits, a reset in the same read as the stream's HEADERS, a CONTINUATION flood, cookie floods (the proxy
// joins cookie fields), and header repeats Node refuses to send. After each: the process is alive (a throw out
// of an event handler would fail this file), what the stream held upstream is cancelled, and the other streams
// of the same connection and other connections are served with exactly their own bytes (each body is its
// path's own pattern).
import assert from 'node:assert/strict';
import {
  type ClientHttp2Session,
  type ClientHttp2Stream,
  constants,
  createServer as createH2Server,
  type Http2Server,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
} from 'node:http2';
import {
  type AddressInfo,
  connect,
  createServer as createNetServer,
  type Server as NetServer,
} from 'node:net';
import { after, before, describe, it } from 'node:test';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy, type InProcessProxy } from '../../src/proxy/proxy.js';
import { forward, route, simpleFleet, upstream, vhost } from '../support/fleet.js';
import { h2Session } from '../support/h2.js';
import {
  CONTINUATION,
  dataOf,
  END_HEADERS,
  END_STREAM,
  frame,
  goawayCode,
  HEADERS,
  headerFrames,
  literalField,
  rawH2,
  requestBlock,
  rstStream,
} from '../support/h2-frames.js';
import { within } from '../support/http.js';
import {
  isOwnBody,
  type StreamingBackend,
  startH1Streamer,
  startH2cStreamer,
} from '../support/streaming-backends.js';

const { NGHTTP2_CANCEL, NGHTTP2_NO_ERROR } = constants;
/** Bounds every wait on a condition; each is met at once when the proxy does its job. */
const WITHIN_MS = 10_000;
/** Bytes each sibling stream reads: several times a stream's window, so they flow while the victim is stuck. */
const SIBLING_BYTES = 300_000;
/** Route timeout of the `/timeout` routes. */
const ROUTE_TIMEOUT_MS = 400;

interface Read {
  status: number;
  body: Buffer;
  rstCode: number;
  headers: IncomingHttpHeaders;
}

/** Reads a whole response on `session`. */
function read(session: ClientHttp2Session, path: string, authority = 'example.com'): Promise<Read> {
  return new Promise((resolve) => {
    const stream = session.request({ ':path': path, ':authority': authority });
    const chunks: Buffer[] = [];
    let status = 0;
    let headers: IncomingHttpHeaders = {};
    stream.on('response', (h) => {
      status = Number(h[':status']);
      headers = h;
    });
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('error', () => {});
    stream.on('close', () =>
      resolve({ status, body: Buffer.concat(chunks), rstCode: stream.rstCode ?? 0, headers }),
    );
  });
}

/** A sibling stream got exactly its own `SIBLING_BYTES`. */
function assertOwn(path: string, reply: Read): void {
  assert.equal(reply.status, 200, `${path}: status`);
  assert.equal(reply.rstCode, 0, `${path}: reset`);
  assert.equal(reply.body.length, SIBLING_BYTES, `${path}: length`);
  assert.ok(isOwnBody(path, reply.body), `${path}: bytes of another stream`);
}

describe('proxy: HTTP/2 stream teardown under a hostile client', () => {
  let proxy: InProcessProxy;
  let port: number;
  let h2cBackend: StreamingBackend;
  let h1Backend: StreamingBackend;
  /** An HTTP/1.1 backend whose head repeats content-type and date. */
  let repeats: NetServer;
  /** An h2c backend that reads the request body and answers with the trailers it got. */
  let recorder: Http2Server;
  const recorded: IncomingHttpHeaders[] = [];

  before(async () => {
    h2cBackend = await startH2cStreamer();
    h1Backend = await startH1Streamer();
    repeats = createNetServer((socket) => {
      socket.on('error', () => {});
      socket.once('data', () =>
        socket.write(
          'HTTP/1.1 200 OK\r\ncontent-type: text/first\r\ncontent-type: text/second\r\n' +
            'date: Thu, 01 Jan 2026 00:00:00 GMT\r\ndate: Fri, 02 Jan 2026 00:00:00 GMT\r\n' +
            'x-list: a\r\nx-list: b\r\ncontent-length: 2\r\n\r\nok',
        ),
      );
    });
    await new Promise<void>((resolve) => repeats.listen({ host: '127.0.0.1', port: 0 }, resolve));
    recorder = createH2Server();
    recorder.on('stream', (stream: ServerHttp2Stream) => {
      stream.on('error', () => {});
      stream.on('trailers', (trailers) => recorded.push(trailers));
      stream.resume();
      stream.on('end', () => {
        stream.respond({ ':status': 200 });
        stream.end('done');
      });
    });
    await new Promise<void>((resolve) => recorder.listen({ host: '127.0.0.1', port: 0 }, resolve));
    proxy = createProxy({ bindAddress: '127.0.0.1', portMap: () => 0, log: discardingLogger });
    const h2c = (name: string, backendPort: number) => {
      const u = upstream(name, [backendPort]);
      u.cluster.protocol = 'h2c';
      return u;
    };
    const prefix = (value: string) => ({ path: { type: 'PathPrefix' as const, value } });
    await proxy.apply(
      simpleFleet(
        [
          vhost(80, 'example.com', [
            route(forward(['streamer-h2c'], { timeoutMs: ROUTE_TIMEOUT_MS }), prefix('/timeout/h2c')),
            route(forward(['streamer-h1'], { timeoutMs: ROUTE_TIMEOUT_MS }), prefix('/timeout/h1')),
            route(forward(['repeats']), prefix('/repeats')),
            route(forward(['recorder']), prefix('/recorder')),
            route(forward(['streamer-h2c'], { timeoutMs: 0 }), prefix('/h2c')),
            route(forward(['streamer-h1'], { timeoutMs: 0 })),
          ]),
        ],
        [
          h2c('streamer-h2c', h2cBackend.port),
          upstream('streamer-h1', [h1Backend.port]),
          upstream('repeats', [(repeats.address() as AddressInfo).port]),
          h2c('recorder', (recorder.address() as AddressInfo).port),
        ],
      ),
    );
    port = proxy.addresses()[0]!.port;
  });

  after(async () => {
    // A session whose stream the client reset with NO_ERROR while writes waited once kept close() waiting forever.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      proxy.close(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('proxy.close() did not end every session')), WITHIN_MS);
      }),
    ]);
    clearTimeout(timer);
    await h2cBackend.close();
    await h1Backend.close();
    await new Promise<void>((resolve) => repeats.close(() => resolve()));
    await new Promise<void>((resolve) => recorder.close(() => resolve()));
  });

  /** The backend request for `path` (each test uses paths of its own). */
  const requestOf = (path: string) =>
    [...h2cBackend.requests, ...h1Backend.requests].find((r) => r.path === path);

  const state = (): string =>
    `in flight ${proxy.inFlight()}, open upstream: h2c ${h2cBackend.open()}, HTTP/1.1 ${h1Backend.open()}`;

  /** A client whose connection window is large, so one stalled stream cannot stall its siblings. */
  async function client(): Promise<ClientHttp2Session> {
    const session = await h2Session(`http://127.0.0.1:${port}`);
    session.on('error', () => {});
    session.setLocalWindowSize(32 * 1024 * 1024);
    return session;
  }

  /** A stream the client never reads: the proxy's writes to it queue once its window is full. */
  function stalled(session: ClientHttp2Session, path: string): ClientHttp2Stream {
    const stream = session.request({ ':path': path, ':authority': 'example.com' });
    stream.on('error', () => {});
    stream.pause();
    return stream;
  }

  /** Another connection is served, with its own bytes. */
  async function othersServed(tag: string): Promise<void> {
    const other = await client();
    try {
      const path = `/h2c/${tag}/other?bytes=${SIBLING_BYTES}`;
      assertOwn(path, await read(other, path));
    } finally {
      other.close();
    }
  }

  for (const [codeName, code] of [
    ['CANCEL', NGHTTP2_CANCEL],
    ['NO_ERROR', NGHTTP2_NO_ERROR],
  ] as const) {
    it(`cancels the upstream of a stream reset (${codeName}) while its writes wait, and serves the others`, async () => {
      const session = await client();
      try {
        const victims = [`/h2c/rst-${codeName}/victim`, `/h1/rst-${codeName}/victim`];
        const streams = victims.map((path) => stalled(session, path));
        // The backends wrote past two stream windows (64 KiB each, the client's and the proxy's upstream one):
        // the proxy holds writes it cannot pass on.
        await within(
          WITHIN_MS,
          () => victims.every((path) => (requestOf(path)?.written ?? 0) > 2 * 64 * 1024),
          () => `victims not stalled: ${state()}`,
        );
        const siblings = ['h2c', 'h1'].flatMap((kind) =>
          [0, 1].map((i) => `/${kind}/rst-${codeName}/sibling-${i}?bytes=${SIBLING_BYTES}`),
        );
        const reads = siblings.map((path) => read(session, path));
        for (const stream of streams) stream.close(code);
        await within(
          WITHIN_MS,
          () => victims.every((path) => requestOf(path)?.cancelled === true),
          () => `a reset stream's upstream is not cancelled: ${state()}`,
        );
        const replies = await Promise.all(reads);
        for (const [i, path] of siblings.entries()) assertOwn(path, replies[i]!);
        await within(
          WITHIN_MS,
          () => proxy.inFlight() === 0,
          () => `requests left in flight: ${state()}`,
        );
      } finally {
        session.close();
      }
      await othersServed(`rst-${codeName}`);
    });
  }

  it('cuts a stream whose route timeout fires while its writes wait, and serves the others', async () => {
    const session = await client();
    try {
      const victims = ['/timeout/h2c/victim', '/timeout/h1/victim'];
      const closed = victims.map((path) => {
        const stream = stalled(session, path);
        return new Promise<number>((resolve) => stream.on('close', () => resolve(stream.rstCode ?? 0)));
      });
      const siblings = ['h2c', 'h1'].map((kind) => `/${kind}/timeout-sibling?bytes=${SIBLING_BYTES}`);
      const replies = await Promise.all(siblings.map((path) => read(session, path)));
      for (const [i, path] of siblings.entries()) assertOwn(path, replies[i]!);
      // The head went out, so the timeout can only cut the stream (a 504 would pass for the response).
      for (const code of await Promise.all(closed)) assert.notEqual(code, NGHTTP2_NO_ERROR);
      await within(
        WITHIN_MS,
        () => victims.every((path) => requestOf(path)?.cancelled === true),
        () => `a timed-out stream's upstream is not cancelled: ${state()}`,
      );
      await within(
        WITHIN_MS,
        () => proxy.inFlight() === 0,
        () => `requests left in flight: ${state()}`,
      );
    } finally {
      session.close();
    }
    await othersServed('timeout');
  });

  for (const host of ['example.com', 'nowhere.example']) {
    it(`takes a stream reset with NO_ERROR in the same read as its HEADERS (${host}), and serves the connection's next stream`, async () => {
      const { socket, frames } = await rawH2(port);
      try {
        const path = `/h2c/same-read-${host}?bytes=1000`;
        socket.write(
          Buffer.concat([
            frame(HEADERS, END_HEADERS | END_STREAM, 1, requestBlock(path, host)),
            rstStream(1, NGHTTP2_NO_ERROR),
          ]),
        );
        const next = `/h2c/after-same-read-${host}?bytes=1000`;
        socket.write(frame(HEADERS, END_HEADERS | END_STREAM, 3, requestBlock(next, 'example.com')));
        await within(
          WITHIN_MS,
          () => frames.some((f) => f.streamId === 3 && (f.flags & END_STREAM) !== 0),
          () => `stream 3 did not end: ${frames.length} frames, ${state()}`,
        );
        const body = dataOf(frames, 3);
        assert.equal(body.length, 1000);
        assert.ok(isOwnBody(next, body));
        assert.equal(dataOf(frames, 1).length, 0);
        // Reset before the proxy saw it: nothing was started upstream for it.
        assert.equal(requestOf(path), undefined);
        await within(
          WITHIN_MS,
          () => proxy.inFlight() === 0 && h2cBackend.open() === 0,
          () => `the reset stream is still held: ${state()}`,
        );
      } finally {
        socket.destroy();
      }
      await othersServed(`same-read-${host}`);
    });
  }

  it('ends a connection that floods CONTINUATION frames, cancelling what its streams held upstream', async () => {
    const { socket, frames, closed } = await rawH2(port);
    const inFlightPath = '/h1/continuation/in-flight';
    socket.write(frame(HEADERS, END_HEADERS | END_STREAM, 1, requestBlock(inFlightPath, 'example.com')));
    await within(
      WITHIN_MS,
      () => requestOf(inFlightPath) !== undefined,
      () => `the first stream did not start: ${state()}`,
    );
    // A header block that never ends: HEADERS without END_HEADERS, then CONTINUATION frames.
    socket.write(frame(HEADERS, 0, 3, requestBlock('/h1/continuation/flood', 'example.com')));
    const piece = frame(CONTINUATION, 0, 3, Buffer.from([0x40, 1, 0x78, 1, 0x79]));
    for (let i = 0; i < 10_000 && !socket.destroyed; i++) {
      socket.write(piece);
      if (i % 100 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    await closed;
    assert.notEqual(goawayCode(frames), undefined);
    await within(
      WITHIN_MS,
      () => requestOf(inFlightPath)?.cancelled === true && proxy.inFlight() === 0,
      () => `the flooding connection's stream is still held: ${state()}`,
    );
    assert.equal(requestOf('/h1/continuation/flood'), undefined);
    await othersServed('continuation');
  });

  it('joins many cookie fields within the header list bound, refuses a flood beyond it, and serves the others', async () => {
    const { socket, frames } = await rawH2(port);
    try {
      const cookie = (i: number, size: number) => `c${i}=${String(i % 10).repeat(size)}`;
      // Within the 16 KiB header list: 90 fields joined into one, in order.
      const within16k = Array.from({ length: 90 }, (_, i) => cookie(i, 60));
      const okPath = '/h1/cookies/within?bytes=1000';
      socket.write(
        headerFrames(
          1,
          Buffer.concat([
            requestBlock(okPath, 'example.com'),
            ...within16k.map((c) => literalField('cookie', c)),
          ]),
          true,
        ),
      );
      // Beyond it, in few large fields and in many small ones (more than the 104 fields a block may hold).
      const large = Array.from({ length: 24 }, (_, i) => cookie(i, 1000));
      const many = Array.from({ length: 400 }, (_, i) => cookie(i, 1));
      socket.write(
        headerFrames(
          3,
          Buffer.concat([
            requestBlock('/h1/cookies/large', 'example.com'),
            ...large.map((c) => literalField('cookie', c)),
          ]),
          true,
        ),
      );
      socket.write(
        headerFrames(
          5,
          Buffer.concat([
            requestBlock('/h1/cookies/many', 'example.com'),
            ...many.map((c) => literalField('cookie', c)),
          ]),
          true,
        ),
      );
      const next = `/h2c/cookies/next?bytes=1000`;
      socket.write(frame(HEADERS, END_HEADERS | END_STREAM, 7, requestBlock(next, 'example.com')));
      const ended = (id: number) =>
        frames.some((f) => f.streamId === id && ((f.flags & END_STREAM) !== 0 || f.type === 0x3));
      await within(
        WITHIN_MS,
        () => [1, 3, 5, 7].every(ended) || goawayCode(frames) !== undefined,
        () => `streams not all answered: ${frames.map((f) => `${f.type}/${f.streamId}`).join(' ')}`,
      );
      // The backend saw the first whole, with its cookies as one field; the floods never reached it.
      const ok = h1Backend.requests.find((r) => r.path === okPath);
      assert.notEqual(ok, undefined);
      assert.equal(requestOf('/h1/cookies/large'), undefined);
      assert.equal(requestOf('/h1/cookies/many'), undefined);
      if (goawayCode(frames) === undefined) {
        assert.equal(dataOf(frames, 7).length, 1000);
        assert.ok(isOwnBody(next, dataOf(frames, 7)));
      }
    } finally {
      socket.destroy();
    }
    await othersServed('cookies');
  });

  it('keeps the first of a single-value field an upstream repeats, where Node would throw sending both', async () => {
    const session = await client();
    try {
      const reply = await read(session, '/repeats');
      assert.equal(reply.status, 200);
      assert.equal(reply.body.toString(), 'ok');
      assert.equal(reply.headers['content-type'], 'text/first');
      assert.equal(reply.headers.date, 'Thu, 01 Jan 2026 00:00:00 GMT');
      // A list field keeps every value.
      assert.equal(reply.headers['x-list'], 'a, b');
    } finally {
      session.close();
    }
  });

  it('keeps the first of a single-value trailer an HTTP/1.1 client repeats, on its way to an h2c backend', async () => {
    const before = recorded.length;
    const socket = connect({ host: '127.0.0.1', port });
    socket.on('error', () => {});
    let response = '';
    socket.on('data', (chunk: Buffer) => {
      response += chunk.toString('latin1');
    });
    const ended = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.write(
      'POST /recorder HTTP/1.1\r\nhost: example.com\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n' +
        '5\r\nhello\r\n0\r\ndate: first\r\ndate: second\r\n\r\n',
    );
    await ended;
    assert.match(response, /^HTTP\/1\.1 200 /);
    assert.equal(recorded.length, before + 1);
    assert.equal(recorded[before]!.date, 'first');
    await othersServed('trailer-repeats');
  });
});

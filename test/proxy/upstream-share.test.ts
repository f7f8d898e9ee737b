// What one HTTP/2 connection may hold upstream: a client that opens many streams and reads none (their windows
// stay shut, so their upstream responses never end) holds at most its share of upstream connections; its other
// requests wait for one of its own to end, in order, and another client is served from the rest of the pool.
import assert from 'node:assert/strict';
import type { ClientHttp2Stream } from 'node:http2';
import { after, before, describe, it } from 'node:test';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy, type InProcessProxy } from '../../src/proxy/proxy.js';
import { forward, route, simpleFleet, upstream, vhost } from '../support/fleet.js';
import { h2Request, h2Session } from '../support/h2.js';
import { settledWithin, within } from '../support/http.js';
import { type StreamingBackend, startH1Streamer } from '../support/streaming-backends.js';

const SHARE = 4;
const POOL = 8;
const STREAMS = 20;
const WITHIN_MS = 10_000;

describe('proxy: the upstream share of one HTTP/2 connection', () => {
  let proxy: InProcessProxy;
  let port: number;
  let backend: StreamingBackend;

  before(async () => {
    backend = await startH1Streamer();
    proxy = createProxy({
      bindAddress: '127.0.0.1',
      portMap: () => 0,
      log: discardingLogger,
      upstreamConnectionsPerEndpoint: POOL,
      http2: { maxUpstreamPerSession: SHARE },
    });
    await proxy.apply(
      simpleFleet(
        [vhost(80, 'example.com', [route(forward(['streamer'], { timeoutMs: 0 }))])],
        [upstream('streamer', [backend.port])],
      ),
    );
    port = proxy.addresses()[0]!.port;
  });

  after(async () => {
    await proxy.close();
    await backend.close();
  });

  const state = (): string =>
    `backend saw ${backend.requests.length}, open ${backend.open()}, proxy in flight ${proxy.inFlight()}`;

  it(`holds a connection of ${STREAMS} unread streams to ${SHARE} upstream connections, serving others meanwhile`, async () => {
    const reader = await h2Session(`http://127.0.0.1:${port}`);
    const stalled = await h2Session(`http://127.0.0.1:${port}`);
    stalled.on('error', () => {});
    try {
      const streams: ClientHttp2Stream[] = [];
      for (let i = 0; i < STREAMS; i++) {
        const stream = stalled.request({ ':path': `/stalled-${i}`, ':authority': 'example.com' });
        stream.on('error', () => {});
        stream.pause();
        streams.push(stream);
      }
      await within(
        WITHIN_MS,
        () => proxy.inFlight() === STREAMS && backend.requests.length >= SHARE,
        () => `the stalled streams did not all arrive: ${state()}`,
      );
      // Another client, from the rest of the pool (the stalled one alone would take all 8 places).
      const other = await settledWithin(
        WITHIN_MS,
        h2Request(reader, '/other?bytes=1000'),
        'the other client',
      );
      assert.equal(other.status, 200);
      assert.equal(other.body.length, 1000);
      const stalledUpstream = backend.requests.filter((r) => r.path.startsWith('/stalled-'));
      assert.equal(stalledUpstream.length, SHARE, state());
      assert.deepEqual(
        stalledUpstream.map((r) => r.path),
        Array.from({ length: SHARE }, (_, i) => `/stalled-${i}`),
      );
      // One of its streams ends: the longest-waiting of its requests takes the place.
      streams[0]!.close();
      await within(
        WITHIN_MS,
        () => backend.requests.some((r) => r.path === `/stalled-${SHARE}`),
        () => `the next waiting request did not start: ${state()}`,
      );
      assert.equal(backend.requests.filter((r) => r.path.startsWith('/stalled-')).length, SHARE + 1);
    } finally {
      stalled.destroy();
      reader.close();
    }
    // Gone: its held and waiting requests end (none of those waiting is started), nothing of it left upstream.
    await within(
      WITHIN_MS,
      () => proxy.inFlight() === 0 && backend.open() === 0,
      () => `left behind: ${state()}`,
    );
    assert.equal(backend.requests.filter((r) => r.path.startsWith('/stalled-')).length, SHARE + 1);
  });
});

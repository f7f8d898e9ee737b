// An HTTP/2 client that goes away while the proxy holds data it cannot deliver: it granted no flow-control window
// (SETTINGS_INITIAL_WINDOW_SIZE 0), opened streams to an h2c and an HTTP/1.1 backend that stream without end,
// then half-closed (FIN) or reset (RST) its TCP connection, over cleartext (h2c) or TLS. At once: every upstream
// stream and request it caused is cancelled, the proxy holds no request in flight and has closed the connection.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { VirtualHost } from '../../src/ir/fleet-config.js';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy, type InProcessProxy } from '../../src/proxy/proxy.js';
import { selfSigned } from '../support/certs.js';
import { fleet, forward, listener, route, upstream, vhost } from '../support/fleet.js';
import { h2Request, h2Session } from '../support/h2.js';
import {
  END_HEADERS,
  END_STREAM,
  frame,
  HEADERS,
  rawH2,
  requestBlock,
  SETTINGS_INITIAL_WINDOW_SIZE,
  settingsFrame,
} from '../support/h2-frames.js';
import { within } from '../support/http.js';
import { type StreamingBackend, startH1Streamer, startH2cStreamer } from '../support/streaming-backends.js';

/** Streams per backend on the leaving connection. */
const STREAMS = 8;
/** Cleanup after the client left is immediate; this only bounds the wait (no proxy timeout comes near it). */
const GONE_WITHIN_MS = 10_000;

describe('proxy: an HTTP/2 client gone with undeliverable data', () => {
  let h2cBackend: StreamingBackend;
  let h1Backend: StreamingBackend;
  const cert = selfSigned('tls.example.com', ['tls.example.com']);

  before(async () => {
    h2cBackend = await startH2cStreamer();
    h1Backend = await startH1Streamer();
  });

  after(async () => {
    await h2cBackend.close();
    await h1Backend.close();
  });

  /** A proxy of its own for each case: what one case leaks must not fail the next. */
  async function startProxy(): Promise<{ proxy: InProcessProxy; plainPort: number; tlsPort: number }> {
    const proxy = createProxy({ bindAddress: '127.0.0.1', portMap: () => 0, log: discardingLogger });
    const h2c = upstream('streamer-h2c', [h2cBackend.port]);
    h2c.cluster.protocol = 'h2c';
    // No route timeout, and the session idle timeout (60 s) far off: only the client's leaving can free these.
    const routes = (port: number, host: string): VirtualHost =>
      vhost(port, host, [
        route(forward(['streamer-h2c'], { timeoutMs: 0 }), { path: { type: 'PathPrefix', value: '/h2c' } }),
        route(forward(['streamer-h1'], { timeoutMs: 0 })),
      ]);
    await proxy.apply(
      fleet(
        [
          { listener: listener(80), vhosts: [routes(80, 'example.com')] },
          {
            listener: listener(443, {
              certificates: [{ hostnames: ['tls.example.com'], secrets: ['default/tls'] }],
            }),
            vhosts: [routes(443, 'tls.example.com')],
          },
        ],
        [h2c, upstream('streamer-h1', [h1Backend.port])],
        [{ name: 'default/tls', ...cert }],
      ),
    );
    const port = (name: string): number => proxy.addresses().find((a) => a.listener === name)!.port;
    return { proxy, plainPort: port('port-80'), tlsPort: port('port-443') };
  }

  for (const transport of ['h2c', 'TLS'] as const) {
    for (const leaving of ['FIN', 'RST'] as const) {
      it(`cancels every upstream stream and closes the connection when the client sends ${leaving} (${transport})`, async () => {
        const { proxy, plainPort, tlsPort } = await startProxy();
        const connections = (): number =>
          proxy.stats().metrics.connections.reduce((sum, [, open]) => sum + open, 0);
        const state = (): string =>
          `in flight ${proxy.inFlight()}, connections ${connections()}, ` +
          `open upstream: h2c ${h2cBackend.open()}, HTTP/1.1 ${h1Backend.open()}`;
        try {
          const h2cBefore = h2cBackend.requests.length;
          const h1Before = h1Backend.requests.length;
          const authority = transport === 'TLS' ? 'tls.example.com' : 'example.com';
          const { socket, closed, reset } = await rawH2(
            transport === 'TLS' ? tlsPort : plainPort,
            settingsFrame([[SETTINGS_INITIAL_WINDOW_SIZE, 0]]),
            transport === 'TLS' ? { servername: authority } : undefined,
          );
          for (let i = 0; i < 2 * STREAMS; i++) {
            const path = `${i < STREAMS ? '/h2c' : '/h1'}/${transport}/${leaving}/${i}`;
            socket.write(frame(HEADERS, END_HEADERS | END_STREAM, 2 * i + 1, requestBlock(path, authority)));
          }
          // Every stream reached its backend, and the backend wrote more than the proxy could pass on.
          const started = (b: StreamingBackend, from: number): boolean =>
            b.requests.length - from === STREAMS &&
            b.requests.slice(from).every((r) => r.written > 64 * 1024);
          await within(
            GONE_WITHIN_MS,
            () => started(h2cBackend, h2cBefore) && started(h1Backend, h1Before),
            () => `streams not all started: ${state()}`,
          );
          assert.equal(proxy.inFlight(), 2 * STREAMS);
          if (leaving === 'FIN') socket.end();
          else reset();
          await within(
            GONE_WITHIN_MS,
            () => h2cBackend.open() === 0 && h1Backend.open() === 0,
            () => `upstream not cancelled after the client's ${leaving}: ${state()}`,
          );
          for (const r of [...h2cBackend.requests.slice(h2cBefore), ...h1Backend.requests.slice(h1Before)])
            assert.equal(r.cancelled, true, `${r.path} was not cancelled`);
          await within(
            GONE_WITHIN_MS,
            () => proxy.inFlight() === 0 && connections() === 0,
            () => `the proxy still holds the client after its ${leaving}: ${state()}`,
          );
          // The proxy closed its side (after a FIN the client's socket is still open until it does).
          await closed;
          // Another client is served.
          const other = await h2Session(`http://127.0.0.1:${plainPort}`);
          try {
            const reply = await h2Request(other, '/h2c/after?bytes=100');
            assert.equal(reply.status, 200);
            assert.equal(reply.body.length, 100);
          } finally {
            other.close();
          }
        } finally {
          await proxy.close();
        }
      });
    }
  }
});

// Tracing through a real proxy: the traceparent a backend receives, the spans a loopback OTLP/HTTP receiver gets,
// a caller's unsampled trace exported by no one, a collector that is down costing spans and never requests,
// and tracing off leaving a client's traceparent alone.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { connect as connectH2 } from 'node:http2';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy, type InProcessProxy } from '../../src/proxy/index.js';
import type { TracingOptions } from '../../src/proxy/telemetry/span-exporter.js';
import { forward, route, simpleFleet, upstream, vhost } from '../support/fleet.js';
import { closeServer, httpRequest, listen, until } from '../support/http.js';
import {
  attributeOf,
  type OtlpCollector,
  type OtlpSpan,
  startOtlpCollector,
} from '../support/otlp-collector.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-(0[01])$/;

async function tracingProxy(
  backend: number,
  tracing: TracingOptions | undefined,
): Promise<[InProcessProxy, number]> {
  const filter = {
    type: 'RequestHeaderModifier' as const,
    headers: { set: [{ name: 'x-filtered', value: 'yes' }], add: [], remove: [] },
  };
  const config = simpleFleet(
    [
      vhost(80, 'example.com', [
        route(forward(['default/echo:80']), { path: { type: 'PathPrefix', value: '/filtered' } }, [filter]),
        route(forward(['default/echo:80'])),
      ]),
    ],
    [upstream('default/echo:80', [backend])],
  );
  const proxy = createProxy({
    bindAddress: '127.0.0.1',
    portMap: () => 0,
    metricsAddress: '127.0.0.1:0',
    log: discardingLogger,
    tracing,
  });
  await proxy.started;
  assert.deepEqual(await proxy.apply(config), { ok: true, listenerErrors: [] });
  return [proxy, proxy.addresses().find((a) => a.listener === 'port-80')!.port];
}

describe('tracing through a running proxy', () => {
  let backend: Server;
  let backendPort: number;
  let collector: OtlpCollector;
  let spans: OtlpSpan[];
  let proxy: InProcessProxy;
  let port: number;

  before(async () => {
    // The backend answers with the traceparent it was sent, so a test sees what went upstream.
    backend = createServer((req, res) => res.end(String(req.headers.traceparent ?? '')));
    // An upgrade is accepted with the traceparent it came with in the 101's head.
    backend.on('upgrade', (req, socket: Socket) => {
      socket.end(
        `HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\nx-traceparent: ${req.headers.traceparent ?? ''}\r\n\r\n`,
      );
    });
    backendPort = await listen(backend);
    collector = await startOtlpCollector();
    spans = collector.spans;
    [proxy, port] = await tracingProxy(backendPort, {
      endpoint: collector.endpoint,
      sampling: 1,
      flushIntervalMs: 20,
    });
  });

  after(async () => {
    await proxy.close();
    await closeServer(backend);
    await collector.close();
  });

  it('starts a trace for a request without one, sends its span as the parent and exports the span', async () => {
    const reply = await httpRequest(port, '/start?q=1');
    assert.equal(reply.status, 200);
    const [, traceId, spanId, flags] = TRACEPARENT.exec(reply.body) ?? [];
    assert.ok(traceId !== undefined, `the backend got ${JSON.stringify(reply.body)}`);
    assert.equal(flags, '01');
    await until(() => spans.some((s) => s.traceId === traceId));
    const span = spans.find((s) => s.traceId === traceId)!;
    assert.equal(span.spanId, spanId, "the backend's parent is the proxy's span");
    assert.equal(span.parentSpanId, undefined);
    assert.equal(span.name, 'GET');
    assert.equal(span.kind, 2);
    assert.equal(attributeOf(span, 'http.request.method'), 'GET');
    assert.equal(attributeOf(span, 'url.path'), '/start');
    assert.equal(attributeOf(span, 'http.response.status_code'), '200');
    assert.equal(attributeOf(span, 'server.address'), 'example.com');
    assert.equal(attributeOf(span, 'portico.upstream.address'), `127.0.0.1:${backendPort}`);
    assert.match(attributeOf(span, 'portico.route') ?? '', /^default\/r\d+\/rule\/0\/match\/0$/);
    const start = BigInt(span.startTimeUnixNano);
    const end = BigInt(span.endTimeUnixNano);
    assert.ok(end >= start);
    const now = BigInt(Date.now()) * 1_000_000n;
    assert.ok(now - start < 60_000_000_000n && start <= now, 'times are nanoseconds since the epoch');
    assert.equal(collector.exports[0]?.contentType, 'application/json');
    assert.deepEqual(collector.exports[0]?.resource, {
      attributes: [{ key: 'service.name', value: { stringValue: 'portico-proxy' } }],
    });
  });

  it("continues a caller's sampled trace, over HTTP/1.1 and HTTP/2 and through a filtered route", async () => {
    const traceparent = `00-${TRACE}-${CALLER_SPAN}-01`;
    const plain = await httpRequest(port, '/continued', { headers: { traceparent } });
    const filtered = await httpRequest(port, '/filtered', { headers: { traceparent } });
    const session = connectH2(`http://127.0.0.1:${port}`);
    const h2Body = await new Promise<string>((resolve, reject) => {
      const stream = session.request({ ':path': '/h2', ':authority': 'example.com', traceparent });
      let body = '';
      stream.setEncoding('utf8');
      stream.on('data', (c: string) => {
        body += c;
      });
      stream.on('end', () => resolve(body));
      stream.on('error', reject);
    });
    session.close();
    for (const sent of [plain.body, filtered.body, h2Body]) {
      const [, traceId, spanId, flags] = TRACEPARENT.exec(sent) ?? [];
      assert.equal(traceId, TRACE, `upstream got ${JSON.stringify(sent)}`);
      assert.notEqual(spanId, CALLER_SPAN);
      assert.equal(flags, '01');
    }
    await until(() => spans.filter((s) => s.traceId === TRACE).length === 3);
    for (const span of spans.filter((s) => s.traceId === TRACE)) assert.equal(span.parentSpanId, CALLER_SPAN);
    const paths = spans.filter((s) => s.traceId === TRACE).map((s) => attributeOf(s, 'url.path'));
    assert.deepEqual(paths.sort(), ['/continued', '/filtered', '/h2']);
  });

  it("keeps a caller's decision not to sample: the trace goes on, no span is exported", async () => {
    const unsampled = '5bf92f3577b34da6a3ce929d0e0e4736';
    const reply = await httpRequest(port, '/quiet', {
      headers: { traceparent: `00-${unsampled}-${CALLER_SPAN}-00` },
    });
    assert.match(reply.body, new RegExp(`^00-${unsampled}-[0-9a-f]{16}-00$`));
    // A sampled request after it: once its span is in, the unsampled one would have been too.
    const marker = await httpRequest(port, '/marker');
    const markerTrace = TRACEPARENT.exec(marker.body)![1];
    await until(() => spans.some((s) => s.traceId === markerTrace));
    assert.equal(
      spans.some((s) => s.traceId === unsampled),
      false,
    );
  });

  it('traces a WebSocket upgrade: the backend gets the proxy span, the span says 101', async () => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.write(
      `GET /ws HTTP/1.1\r\nhost: example.com\r\nupgrade: websocket\r\nconnection: Upgrade\r\ntraceparent: 00-${TRACE}-${CALLER_SPAN}-01\r\n\r\n`,
    );
    let text = '';
    socket.setEncoding('utf8');
    for await (const chunk of socket) text += chunk as string;
    const [, traceId, spanId] = TRACEPARENT.exec(/x-traceparent: (\S+)/.exec(text)?.[1] ?? '') ?? [];
    assert.equal(traceId, TRACE, text);
    await until(() => spans.some((s) => s.spanId === spanId));
    const span = spans.find((s) => s.spanId === spanId)!;
    assert.equal(span.parentSpanId, CALLER_SPAN);
    assert.equal(attributeOf(span, 'http.response.status_code'), '101');
  });

  it('counts exported spans in the metrics', async () => {
    const metricsPort = proxy.addresses().find((a) => a.listener === 'metrics')!.port;
    const text = (await httpRequest(metricsPort, '/metrics')).body;
    const exported = Number(/portico_tracing_spans_total\{outcome="exported"\} (\d+)/.exec(text)?.[1]);
    assert.ok(exported >= 5, text);
  });
});

describe('tracing with the collector down, and tracing off', () => {
  let backend: Server;
  let backendPort: number;

  before(async () => {
    backend = createServer((req, res) => res.end(String(req.headers.traceparent ?? '')));
    backendPort = await listen(backend);
  });

  after(() => closeServer(backend));

  it('answers every request while spans are dropped and counted', async () => {
    const closed = createServer();
    const closedPort = await listen(closed);
    await closeServer(closed);
    const [proxy, port] = await tracingProxy(backendPort, {
      endpoint: `http://127.0.0.1:${closedPort}/v1/traces`,
      sampling: 1,
      flushIntervalMs: 10,
    });
    try {
      for (let i = 0; i < 20; i++) assert.equal((await httpRequest(port, `/down/${i}`)).status, 200);
      await until(() => proxy.stats().metrics.spans.dropped === 20);
      assert.equal(proxy.stats().metrics.spans.exported, 0);
    } finally {
      await proxy.close();
    }
  });

  it("passes a client's traceparent on untouched, even an invalid one", async () => {
    const [proxy, port] = await tracingProxy(backendPort, undefined);
    try {
      const reply = await httpRequest(port, '/off', { headers: { traceparent: 'not-a-traceparent' } });
      assert.equal(reply.body, 'not-a-traceparent');
      assert.equal((await httpRequest(port, '/off')).body, '', 'and starts none');
    } finally {
      await proxy.close();
    }
  });
});

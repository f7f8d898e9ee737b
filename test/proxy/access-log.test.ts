// The access log with real requests through a real proxy: the documented fields for a forwarded request, the
// flags of the proxy's own answers, text and JSON lines, sampling, and whole lines in writes a pipe keeps whole.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { connect as connectH2, createServer as createH2Server } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { ACCESS_LOG_FIELDS } from '../../src/ir/access-log.js';
import type { ClusterProtocol } from '../../src/ir/fleet-config.js';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy, type Proxy as PorticoProxy } from '../../src/proxy/index.js';
import {
  AccessLog,
  type AccessLogEntry,
  type AccessLogOptions,
  accessLogFields,
  lineFormat,
  redactedPath,
  StartTime,
} from '../../src/proxy/telemetry/access-log.js';
import { forward, route, simpleFleet, upstream, vhost } from '../support/fleet.js';
import { closeServer, httpRequest, listen, until } from '../support/http.js';

const ALL = [...ACCESS_LOG_FIELDS];

interface LoggingProxy {
  proxy: PorticoProxy;
  port: number;
  lines: string[];
  writes: string[];
}

async function loggingProxy(
  backend: number,
  closedPort: number,
  accessLog: Omit<AccessLogOptions, 'write'>,
  protocol: ClusterProtocol = 'http',
): Promise<LoggingProxy> {
  const writes: string[] = [];
  const lines: string[] = [];
  const write = (text: string) => {
    writes.push(text);
    lines.push(...text.split('\n').filter((l) => l !== ''));
  };
  const config = simpleFleet(
    [
      vhost(80, 'example.com', [
        route(forward(['default/closed:80']), { path: { type: 'PathPrefix', value: '/closed' } }),
        route(forward(['default/slow:80'], { timeoutMs: 200 }), {
          path: { type: 'PathPrefix', value: '/slow' },
        }),
        route(forward(['default/echo:80'])),
      ]),
    ],
    [
      withProtocol(upstream('default/echo:80', [backend]), protocol),
      upstream('default/slow:80', [backend]),
      upstream('default/closed:80', [closedPort]),
    ],
  );
  const proxy = createProxy({
    bindAddress: '127.0.0.1',
    portMap: () => 0,
    log: discardingLogger,
    accessLog: { ...accessLog, write },
  });
  assert.deepEqual(await proxy.apply(config), { ok: true, listenerErrors: [] });
  const port = proxy.addresses().find((a) => a.listener === 'port-80')!.port;
  return { proxy, port, lines, writes };
}

function withProtocol(
  u: ReturnType<typeof upstream>,
  protocol: ClusterProtocol,
): ReturnType<typeof upstream> {
  return { ...u, cluster: { ...u.cluster, protocol } };
}

async function unusedPort(): Promise<number> {
  const server = createServer();
  const port = await listen(server);
  await closeServer(server);
  return port;
}

describe('the access log of a running proxy', () => {
  let backend: Server;
  let backendPort: number;
  let closedPort: number;
  let json: LoggingProxy;

  before(async () => {
    backend = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (req.url?.startsWith('/slow')) return; // never answers: the route's timeout fires
        res.end(`got ${Buffer.concat(chunks).length} bytes`);
      });
    });
    // Upgrades: 101, then every byte echoed until the client ends.
    backend.on('upgrade', (_req, socket: Socket) => {
      socket.write('HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\n\r\n');
      socket.on('data', (d: Buffer) => socket.write(d));
      socket.on('end', () => socket.end());
    });
    backendPort = await listen(backend);
    closedPort = await unusedPort();
    json = await loggingProxy(backendPort, closedPort, { format: 'json', fields: ALL, sampling: 1 });
  });

  after(async () => {
    await json.proxy.close();
    await closeServer(backend);
  });

  it('logs a forwarded HTTP/1.1 request with every documented field', async () => {
    const reply = await httpRequest(json.port, '/hello?x=1', {
      method: 'POST',
      body: 'abcdefghij',
      headers: { 'x-request-id': 'trace-me-1' },
    });
    assert.equal(reply.status, 200);
    await until(() => json.lines.some((l) => l.includes('trace-me-1')));
    const entry = JSON.parse(json.lines.find((l) => l.includes('trace-me-1'))!);
    assert.equal(entry.method, 'POST');
    assert.equal(entry.authority, 'example.com');
    assert.equal(entry.path, '/hello?x=1');
    assert.equal(entry.protocol, 'HTTP/1.1');
    assert.equal(entry.status, 200);
    assert.equal(entry.response_flags, undefined);
    assert.equal(entry.bytes_received, 10);
    assert.equal(entry.bytes_sent, Buffer.byteLength(reply.body));
    assert.equal(entry.upstream_host, `127.0.0.1:${backendPort}`);
    assert.equal(typeof entry.upstream_service_time_ms, 'number');
    assert.ok(entry.duration_ms >= entry.upstream_service_time_ms - 1);
    assert.match(entry.route_name, /^default\/r\d+\/rule\/0\/match\/0$/);
    assert.equal(entry.listener, 'port-80');
    assert.equal(entry.request_id, 'trace-me-1');
    assert.match(entry.client_address, /127\.0\.0\.1$/);
    assert.ok(Math.abs(Date.parse(entry.start_time) - Date.now()) < 60_000);
  });

  it('logs the id the proxy made for a request that came without one: the id the backend saw', async () => {
    const seen: string[] = [];
    const idEcho = createServer((req, res) => {
      seen.push(String(req.headers['x-request-id']));
      res.end();
    });
    const port = await listen(idEcho);
    const own = await loggingProxy(port, closedPort, { format: 'json', fields: ['request_id'], sampling: 1 });
    try {
      assert.equal((await httpRequest(own.port, '/')).status, 200);
      await until(() => own.lines.length === 1);
      assert.deepEqual(JSON.parse(own.lines[0]!), { request_id: seen[0] });
      assert.match(seen[0]!, /^[0-9a-f-]{36}$/);
    } finally {
      await own.proxy.close();
      await closeServer(idEcho);
    }
  });

  it('logs the id an h2c backend saw, as for HTTP/1.1: each upstream reports the id it sent', async () => {
    const seen: string[] = [];
    const idEcho = createH2Server((req, res) => {
      seen.push(String(req.headers['x-request-id']));
      res.end();
    });
    await new Promise<void>((resolve) => idEcho.listen({ host: '127.0.0.1', port: 0 }, resolve));
    const port = (idEcho.address() as AddressInfo).port;
    const own = await loggingProxy(
      port,
      closedPort,
      { format: 'json', fields: ['request_id'], sampling: 1 },
      'h2c',
    );
    try {
      assert.equal((await httpRequest(own.port, '/')).status, 200);
      await until(() => own.lines.length === 1);
      assert.match(seen[0]!, /^[0-9a-f-]{36}$/);
      assert.deepEqual(JSON.parse(own.lines[0]!), { request_id: seen[0] });
    } finally {
      await own.proxy.close();
      await new Promise<void>((resolve) => idEcho.close(() => resolve()));
    }
  });

  it('names why the proxy answered itself: no route, connect failure, upstream timeout', async () => {
    const before = json.lines.length;
    assert.equal((await httpRequest(json.port, '/', { host: 'unknown.example' })).status, 404);
    assert.equal((await httpRequest(json.port, '/closed')).status, 502);
    assert.equal((await httpRequest(json.port, '/slow')).status, 504);
    await until(() => json.lines.length >= before + 3);
    const entries = json.lines.slice(before).map((l) => JSON.parse(l));
    assert.deepEqual(
      entries.map((e) => [e.status, e.response_flags]),
      [
        [404, 'no_route'],
        [502, 'upstream_connect_failure'],
        [504, 'upstream_timeout'],
      ],
    );
    assert.equal(entries[0].upstream_host, undefined);
    assert.equal(entries[0].route_name, undefined);
    assert.equal(entries[1].upstream_host, `127.0.0.1:${closedPort}`);
  });

  it('logs a WebSocket tunnel when it closes: 101, its bytes each way, its route and backend', async () => {
    const socket = connect({ host: '127.0.0.1', port: json.port });
    const request =
      'GET /ws-log HTTP/1.1\r\nhost: example.com\r\nupgrade: websocket\r\nconnection: Upgrade\r\n\r\n';
    socket.write(request);
    let text = '';
    socket.setEncoding('utf8');
    for await (const chunk of socket) {
      text += chunk as string;
      if (text.includes('\r\n\r\n') && !text.endsWith('\r\n\r\n')) break;
      if (text.startsWith('HTTP/1.1 101') && text.endsWith('\r\n\r\n')) socket.write('ping-ping');
    }
    assert.match(text, /^HTTP\/1\.1 101/);
    assert.ok(text.endsWith('ping-ping'), text);
    socket.end();
    await until(() => json.lines.some((l) => l.includes('/ws-log')));
    const entry = JSON.parse(json.lines.find((l) => l.includes('/ws-log'))!);
    assert.equal(entry.status, 101);
    assert.equal(entry.method, 'GET');
    assert.equal(entry.protocol, 'HTTP/1.1');
    assert.equal(entry.response_flags, undefined);
    assert.equal(entry.bytes_received, Buffer.byteLength(request) + 'ping-ping'.length);
    assert.equal(entry.bytes_sent, Buffer.byteLength(text));
    assert.equal(entry.upstream_host, `127.0.0.1:${backendPort}`);
    assert.match(entry.route_name, /^default\/r\d+\/rule\/0\/match\/0$/);
    assert.match(entry.request_id, /^[0-9a-f-]{36}$/);
  });

  it('logs a refused upgrade with why: no route', async () => {
    const socket = connect({ host: '127.0.0.1', port: json.port });
    socket.write(
      'GET /ws-nowhere HTTP/1.1\r\nhost: unknown.example\r\nupgrade: websocket\r\nconnection: Upgrade\r\n\r\n',
    );
    socket.resume();
    await new Promise((resolve) => socket.on('close', resolve));
    await until(() => json.lines.some((l) => l.includes('/ws-nowhere')));
    const entry = JSON.parse(json.lines.find((l) => l.includes('/ws-nowhere'))!);
    assert.deepEqual([entry.status, entry.response_flags], [404, 'no_route']);
  });

  it('logs a request whose body stalled past its route timeout as 408 request_timeout', async () => {
    const before = json.lines.length;
    const status = await new Promise<number>((resolve, reject) => {
      const socket = connect(json.port, '127.0.0.1', () => {
        socket.write('POST /slow HTTP/1.1\r\nhost: example.com\r\ncontent-length: 100\r\n\r\n0123456789');
      });
      let reply = '';
      socket.setEncoding('latin1');
      socket.on('data', (c: string) => {
        reply += c;
        const line = /^HTTP\/1\.1 (\d{3})/.exec(reply);
        if (line) {
          resolve(Number(line[1]));
          socket.destroy();
        }
      });
      socket.on('error', reject);
    });
    assert.equal(status, 408);
    await until(() => json.lines.length > before);
    const entry = JSON.parse(json.lines[before]!);
    assert.deepEqual(
      [entry.status, entry.response_flags, entry.bytes_received],
      [408, 'request_timeout', 10],
    );
  });

  it('logs HTTP/2 requests as HTTP/2 with their authority', async () => {
    const h2 = await loggingProxy(backendPort, closedPort, {
      format: 'json',
      fields: ['protocol', 'authority', 'status', 'bytes_sent'],
      sampling: 1,
    });
    const session = connectH2(`http://127.0.0.1:${h2.port}`);
    try {
      const body = await new Promise<string>((resolve, reject) => {
        const stream = session.request({ ':path': '/', ':authority': 'example.com' });
        let text = '';
        stream.setEncoding('utf8');
        stream.on('data', (c: string) => {
          text += c;
        });
        stream.on('end', () => resolve(text));
        stream.on('error', reject);
        stream.end();
      });
      await until(() => h2.lines.length === 1);
      assert.deepEqual(JSON.parse(h2.lines[0]!), {
        protocol: 'HTTP/2',
        authority: 'example.com',
        status: 200,
        bytes_sent: Buffer.byteLength(body),
      });
    } finally {
      session.close();
      await h2.proxy.close();
    }
  });

  it('writes text lines of the chosen fields, and none at sampling 0', async () => {
    const text = await loggingProxy(backendPort, closedPort, {
      format: 'text',
      fields: ['method', 'path', 'status', 'response_flags'],
      sampling: 1,
    });
    const silent = await loggingProxy(backendPort, closedPort, { format: 'json', fields: ALL, sampling: 0 });
    try {
      await httpRequest(text.port, '/a%20b');
      await httpRequest(silent.port, '/');
      await until(() => text.lines.length === 1);
      assert.equal(text.lines[0], 'method=GET path=/a%20b status=200 response_flags=-');
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.deepEqual(silent.lines, []);
    } finally {
      await text.proxy.close();
      await silent.proxy.close();
    }
  });
});

const sample: AccessLogEntry = {
  startMs: Date.UTC(2026, 10, 25, 12, 0, 0),
  method: 'GET',
  authority: 'a.example',
  path: '/with space"quote',
  protocol: 'HTTP/1.1',
  status: 200,
  flag: undefined,
  bytesReceived: 0,
  bytesSent: 5,
  durationMs: 1.23456,
  upstreamHost: undefined,
  upstreamServiceTimeMs: undefined,
  upstreamRetries: undefined,
  routeName: '-',
  listener: 'port-80',
  requestId: 'id',
  clientAddress: '127.0.0.1',
  accessReason: undefined,
};

describe('access log lines', () => {
  it('JSON leaves absent values out; text shows them as - and quotes what a reader could misparse', () => {
    assert.deepEqual(
      JSON.parse(lineFormat('json', ['start_time', 'path', 'duration_ms', 'upstream_host'])(sample)),
      {
        start_time: '2026-11-25T12:00:00.000Z',
        path: '/with space"quote',
        duration_ms: 1.235,
      },
    );
    assert.equal(
      lineFormat('text', ['method', 'path', 'upstream_host', 'route_name'])(sample),
      'method=GET path="/with space\\"quote" upstream_host=- route_name=-',
    );
  });

  it('a JSON line parses back to the entry, whatever bytes its strings hold', () => {
    const json = lineFormat('json', ['path', 'authority', 'request_id', 'status', 'bytes_sent']);
    for (const text of [
      '/plain',
      '/q"uote\\back',
      '/ctl\u0000\u001f\u007f',
      '/é€😀',
      '/lone\ud800',
      '/sep\u2028\u2029',
      '/nel\u0085',
    ]) {
      const entry = { ...sample, path: text, authority: `${text}.example`, requestId: text };
      const line = json(entry);
      // Printable ASCII only: no reader, Unicode-aware or not, finds a line break inside a line.
      assert.match(line, /^[\x20-\x7e]+$/, JSON.stringify(line));
      assert.deepEqual(JSON.parse(line), {
        path: text,
        authority: `${text}.example`,
        request_id: text,
        status: 200,
        bytes_sent: 5,
      });
    }
  });

  it('redacts the values of named query parameters, as sent or percent-decoded, and nothing else', () => {
    const names = new Set(['token', 'api key']);
    const cases: [string, string][] = [
      ['/a', '/a'],
      ['/a?x=1', '/a?x=1'],
      ['/a?token=s3cret&x=1', '/a?token=REDACTED&x=1'],
      ['/a?x=1&token=&token=two', '/a?x=1&token=REDACTED&token=REDACTED'],
      ['/a?%74oken=s3cret', '/a?%74oken=REDACTED'],
      ['/a?api+key=k&api%20key=k2', '/a?api+key=REDACTED&api%20key=REDACTED'],
      ['/a?token', '/a?token=REDACTED'],
      ['/a?tokens=kept&Token=kept&%zz=kept', '/a?tokens=kept&Token=kept&%zz=kept'],
    ];
    for (const [path, expected] of cases) assert.equal(redactedPath(path, names), expected, path);
    const line = lineFormat('json', ['path'], ['token'])({ ...sample, path: '/p?token=abc&q=1' });
    assert.deepEqual(JSON.parse(line), { path: '/p?token=REDACTED&q=1' });
  });

  it('a text line quotes and escapes what is not printable ASCII', () => {
    const line = lineFormat('text', ['path', 'status'])({ ...sample, path: '/nel\u0085sep\u2028é' });
    assert.equal(line, 'path="/nel\\u0085sep\\u2028\\u00e9" status=200');
  });

  it('start times are ISO 8601 in ms, the same as Date gives, across seconds and back in time', () => {
    const time = new StartTime();
    const base = Date.parse('2026-11-25T23:59:59.000Z');
    for (const ms of [
      base,
      base + 7,
      base + 45.9,
      base + 999.99,
      base + 1000,
      base + 86_400_123,
      base - 1,
      0,
    ]) {
      assert.equal(time.iso(ms), new Date(ms).toISOString(), `at ${ms}`);
    }
  });

  it('an unknown field is an error that names it', () => {
    assert.throws(
      () => accessLogFields(['status', 'nope'], '--access-log-fields'),
      /--access-log-fields: unknown access log field 'nope'/,
    );
  });

  it('gathers lines into writes of whole lines, each at most 4096 bytes, written once full', () => {
    const writes: string[] = [];
    const log = new AccessLog({
      format: 'json',
      fields: ['path'],
      sampling: 1,
      write: (t) => writes.push(t),
    });
    const path = `/${'p'.repeat(100)}`;
    for (let i = 0; i < 200; i++) log.record({ ...sample, path: `${path}${i}` });
    const beforeFlush = writes.length;
    assert.ok(beforeFlush > 1, 'full writes go out without waiting');
    log.flush();
    assert.equal(writes.length, beforeFlush + 1, 'flush writes the rest');
    for (const w of writes) {
      assert.ok(Buffer.byteLength(w) <= 4096, `a write of ${Buffer.byteLength(w)} bytes`);
      assert.ok(w.endsWith('\n'));
    }
    const lines = writes
      .join('')
      .split('\n')
      .filter((l) => l !== '');
    assert.equal(lines.length, 200);
    assert.equal(JSON.parse(lines[199]!).path, `${path}199`);
    log.flush();
    assert.equal(writes.length, beforeFlush + 1, 'nothing is left to write twice');
  });

  it('a line alone is written when the flush interval ends, not before', async () => {
    const writes: string[] = [];
    const log = new AccessLog({
      format: 'text',
      fields: ['method'],
      sampling: 1,
      write: (t) => writes.push(t),
      flushIntervalMs: 50,
    });
    log.record(sample);
    await new Promise((resolve) => setTimeout(resolve, 10));
    assert.deepEqual(writes, [], 'waits for company');
    await new Promise((resolve) => setTimeout(resolve, 80));
    assert.deepEqual(writes, ['method=GET\n']);
  });
});

// HTTP/2 through the proxy end to end with real clients: h2c with prior knowledge and HTTP/1.1 on one cleartext
// port, h2 by ALPN on TLS (and 421 for an authority its certificate was not chosen for), the same routing,
// filters, redirects and 404 as HTTP/1.1, h2 to HTTP/1.1 and h2c backends with bodies and trailers, and gRPC
// calls (@grpc/grpc-js) with gRPC statuses for the proxy's own answers.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer, request as httpRequestRaw, type Server } from 'node:http';
import {
  type ClientHttp2Session,
  constants,
  createServer as createH2cServer,
  type Http2Server,
} from 'node:http2';
import { request as httpsRequest } from 'node:https';
import { connect, createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import * as grpc from '@grpc/grpc-js';
import { ECHO_METHOD, encodeStrings, grpcFrame } from '../../src/echo/grpc.js';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy, type Proxy as PorticoProxy } from '../../src/proxy/index.js';
import { selfSigned } from '../support/certs.js';
import { fleet, forward, listener, route, upstream, vhost } from '../support/fleet.js';
import { grpcClient, grpcEcho, h2Request, h2Session } from '../support/h2.js';
import { DATA, END_HEADERS, frame, HEADERS, RST_STREAM, rawH2, requestBlock } from '../support/h2-frames.js';
import {
  closeServer,
  type EchoBody,
  freePort,
  httpRequest,
  listen,
  startEcho,
  until,
} from '../support/http.js';
import { parsePrometheus, sampleValue } from '../support/prometheus.js';

const run = promisify(execFile);

/** The fields of `record` among `names`, for comparisons that ignore the rest. */
function pick(record: Record<string, string>, names: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of names) if (record[name] !== undefined) out[name] = record[name];
  return out;
}

function h2c(name: string, ports: number[]) {
  const u = upstream(name, ports);
  u.cluster.protocol = 'h2c';
  return u;
}

describe('proxy HTTP/2', () => {
  let proxy: PorticoProxy;
  let port: number;
  let tlsPort: number;
  let echo: Server;
  let mirror: Server;
  let trailing: Server;
  let recorder: Server;
  let trailerReader: Server;
  let h2cTrailerReader: Http2Server;
  let h2cEarly: Http2Server;
  let h2cEarlySessions = 0;
  const uploads: string[] = [];
  let silent: NetServer;
  const silentSockets: Socket[] = [];
  let session: ClientHttp2Session;
  let grpcRoute: string;
  const certA = selfSigned('a.example.com', ['a.example.com']);
  const certB = selfSigned('b.example.com', ['b.example.com']);

  before(async () => {
    const e = await startEcho('pod-a');
    echo = e.server;
    // Answers with the request body's length and the framing it came with (HTTP/1.1 backend).
    mirror = createServer((req, res) => {
      let length = 0;
      req.on('data', (c: Buffer) => {
        length += c.length;
      });
      req.on('end', () => {
        res.setHeader(
          'x-framing',
          req.headers['transfer-encoding'] ?? `length ${req.headers['content-length']}`,
        );
        res.end(String(length));
      });
    });
    const mirrorPort = await listen(mirror);
    // Chunked answers with trailers (HTTP/1.1 backend).
    trailing = createServer((_req, res) => {
      res.setHeader('trailer', 'x-checksum');
      res.write('part');
      res.addTrailers({ 'x-checksum': 'abc' });
      res.end();
    });
    const trailingPort = await listen(trailing);
    // Records how each upload ended: whole (its end came) or broken.
    recorder = createServer((req, res) => {
      let length = 0;
      req.on('data', (c: Buffer) => {
        length += c.length;
      });
      req.on('end', () => {
        uploads.push(`complete ${length}`);
        res.end();
      });
      req.on('aborted', () => uploads.push(`aborted ${length}`));
    });
    const recorderPort = await listen(recorder);
    // Answer with the request body, its framing and the request trailers they received (HTTP/1.1 and h2c).
    trailerReader = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => {
        body += c.toString();
      });
      req.on('end', () => {
        const framing = req.headers['transfer-encoding'] ?? `length ${req.headers['content-length']}`;
        res.end(JSON.stringify({ body, framing, trailers: req.trailers }));
      });
    });
    const trailerReaderPort = await listen(trailerReader);
    h2cTrailerReader = createH2cServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => {
        body += c.toString();
      });
      req.on('end', () => res.end(JSON.stringify({ body, framing: 'h2', trailers: { ...req.trailers } })));
    });
    await new Promise<void>((resolve) => h2cTrailerReader.listen({ host: '127.0.0.1', port: 0 }, resolve));
    const h2cTrailerReaderPort = (h2cTrailerReader.address() as { port: number }).port;
    // One stream per session; refuses uploads at once, without reading them.
    h2cEarly = createH2cServer({ settings: { maxConcurrentStreams: 1 } }, (_req, res) => {
      res.statusCode = 413;
      res.end();
    });
    h2cEarly.on('session', () => h2cEarlySessions++);
    await new Promise<void>((resolve) => h2cEarly.listen({ host: '127.0.0.1', port: 0 }, resolve));
    const h2cEarlyPort = (h2cEarly.address() as { port: number }).port;
    // Accepts and never answers: the route timeout is what ends a request to it.
    silent = createNetServer((socket) => silentSockets.push(socket));
    await new Promise<void>((resolve) => silent.listen({ host: '127.0.0.1', port: 0 }, resolve));
    const silentPort = (silent.address() as { port: number }).port;

    const prefix = (value: string) => ({ path: { type: 'PathPrefix' as const, value } });
    const routes = [
      route(forward(['echo-h2c']), prefix('/portico.echo.v1.Echo')),
      route(forward(['echo-h2c']), prefix('/h2c')),
      route(forward(['mirror']), prefix('/mirror')),
      route(forward(['trailing']), prefix('/trailing')),
      route(forward(['recorder']), prefix('/recorder')),
      route(forward(['trailer-reader']), prefix('/trailer-reader')),
      route(forward(['h2c-trailer-reader']), prefix('/h2c-trailer-reader')),
      route(forward(['h2c-early']), prefix('/h2c-early')),
      route(forward(['silent'], { timeoutMs: 300 }), prefix('/silent')),
      route(forward(['empty']), prefix('/empty')),
      route(forward(['refused-h2c']), prefix('/refused')),
      route(forward([{ weight: 1, filters: [] }]), prefix('/invalid')),
      route(
        { type: 'Redirect', hostname: 'other.example.com', statusCode: 302 },
        { path: { type: 'Exact', value: '/redirect' } },
      ),
      route(
        forward(['echo']),
        {
          ...prefix('/match'),
          method: 'POST',
          headers: [{ type: 'Exact', name: 'x-match', value: 'yes' }],
          queryParams: [{ type: 'Exact', name: 'q', value: '1' }],
        },
        [
          {
            type: 'RequestHeaderModifier',
            headers: { set: [{ name: 'x-added', value: '1' }], add: [], remove: [] },
          },
          {
            type: 'ResponseHeaderModifier',
            headers: { set: [], add: [{ name: 'x-resp', value: 'r' }], remove: [] },
          },
        ],
      ),
      route(forward(['echo'], {}), prefix('/rewrite'), [
        { type: 'URLRewrite', path: { type: 'ReplacePrefixMatch', value: '/rewritten' } },
      ]),
      route(forward(['echo'])),
    ];
    const plain = vhost(80, 'example.com', routes);
    const grpcOnly = vhost(80, 'grpc.example.com', [route(forward(['echo-h2c']), prefix('/other'))]);
    const tlsA = vhost(443, 'a.example.com', [route(forward(['echo']))]);
    const tlsB = vhost(443, 'b.example.com', [route(forward(['echo-h2c']))]);
    const config = fleet(
      [
        { listener: listener(80), vhosts: [plain, grpcOnly] },
        {
          listener: listener(443, {
            certificates: [
              { hostnames: ['a.example.com'], secrets: ['default/a'] },
              { hostnames: ['b.example.com'], secrets: ['default/b'] },
            ],
          }),
          vhosts: [tlsA, tlsB],
        },
      ],
      [
        upstream('echo', [e.port]),
        h2c('echo-h2c', [e.port]),
        upstream('mirror', [mirrorPort]),
        upstream('trailing', [trailingPort]),
        upstream('recorder', [recorderPort]),
        upstream('trailer-reader', [trailerReaderPort]),
        h2c('h2c-trailer-reader', [h2cTrailerReaderPort]),
        h2c('h2c-early', [h2cEarlyPort]),
        upstream('silent', [silentPort]),
        upstream('empty', []),
        h2c('refused-h2c', [await freePort()]),
      ],
      [
        { name: 'default/a', ...certA },
        { name: 'default/b', ...certB },
      ],
    );
    proxy = createProxy({
      bindAddress: '127.0.0.1',
      portMap: () => 0,
      log: discardingLogger,
      metricsAddress: '127.0.0.1:0',
    });
    await proxy.started;
    grpcRoute = routes[0]!.name;
    const outcome = await proxy.apply(config);
    assert.deepEqual(outcome, { ok: true, listenerErrors: [] });
    port = proxy.addresses().find((a) => a.listener === 'port-80')!.port;
    tlsPort = proxy.addresses().find((a) => a.listener === 'port-443')!.port;
    session = await h2Session(`http://127.0.0.1:${port}`);
  });

  after(async () => {
    session.close();
    await proxy.close();
    for (const s of silentSockets) s.destroy();
    silent.close();
    await closeServer(mirror);
    await closeServer(trailing);
    await closeServer(recorder);
    await closeServer(trailerReader);
    await new Promise((resolve) => h2cTrailerReader.close(resolve));
    await new Promise((resolve) => h2cEarly.close(resolve));
    await closeServer(echo);
  });

  it('serves h2c with prior knowledge and HTTP/1.1 on the same cleartext port', async () => {
    const h2 = await h2Request(session, '/hello');
    assert.equal(h2.status, 200);
    assert.equal((JSON.parse(h2.body) as EchoBody).host, 'example.com');
    const h1 = await httpRequest(port, '/hello');
    assert.equal(h1.status, 200);
    assert.equal((JSON.parse(h1.body) as EchoBody).proto, 'HTTP/1.1');
    // Upgrade: h2c on HTTP/1.1 is neither honoured nor forwarded.
    const upgrade = await httpRequest(port, '/hello', {
      headers: {
        connection: 'upgrade, http2-settings',
        upgrade: 'h2c',
        'http2-settings': 'AAMAAABkAAQAAP__',
      },
    });
    assert.equal(upgrade.status, 200);
    const seen = (JSON.parse(upgrade.body) as EchoBody).headers;
    assert.equal(seen.Upgrade, undefined);
    assert.equal(seen['Http2-Settings'], undefined);
  });

  it('never tunnels an Upgrade that names h2c among others, or comes on two lines: served as a plain request', async () => {
    for (const lines of [
      ['upgrade: h2c, websocket'],
      ['upgrade: websocket, h2c'],
      ['upgrade: h2c', 'upgrade: websocket'],
      ['upgrade: websocket', 'upgrade: websocket'],
    ]) {
      const raw = await new Promise<string>((resolve, reject) => {
        const socket = connect({ host: '127.0.0.1', port });
        let text = '';
        socket.setEncoding('latin1');
        socket.on('data', (c: string) => {
          text += c;
        });
        socket.on('end', () => resolve(text));
        socket.on('error', reject);
        socket.write(
          `GET /hello HTTP/1.1\r\nhost: example.com\r\nconnection: upgrade, close\r\n${lines.map((l) => `${l}\r\n`).join('')}sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nsec-websocket-version: 13\r\n\r\n`,
        );
      });
      assert.match(raw, /^HTTP\/1\.1 200 /, `${lines.join(' + ')}: ${raw.slice(0, 200)}`);
      const seen = (JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)) as EchoBody).headers;
      assert.equal(seen.Upgrade, undefined, lines.join(' + '));
    }
  });

  it('is reached by curl with --http2-prior-knowledge', async () => {
    const { stdout } = await run('curl', [
      '-sS',
      '--http2-prior-knowledge',
      '-o',
      '/dev/null',
      '-w',
      '%{http_version} %{http_code}',
      '-H',
      'host: example.com',
      `http://127.0.0.1:${port}/hello`,
    ]);
    assert.equal(stdout, '2 200');
  });

  it('routes, filters, redirects and answers 404 as HTTP/1.1 does', async () => {
    const cases: { path: string; method?: string; host?: string; headers?: Record<string, string> }[] = [
      { path: '/match?q=1', method: 'POST', headers: { 'x-match': 'yes' } },
      { path: '/match?q=2', method: 'POST', headers: { 'x-match': 'yes' } },
      { path: '/rewrite/x?y=1' },
      { path: '/head', method: 'HEAD' },
      { path: '/status/204' },
      { path: '/redirect' },
      { path: '/anything', host: 'unserved.test' },
      { path: '/other', host: 'grpc.example.com:80' },
      { path: '/nothing-here', host: 'grpc.example.com' },
      { path: '/invalid' },
      { path: '/empty' },
    ];
    for (const c of cases) {
      const host = c.host ?? 'example.com';
      const h1 = await httpRequest(port, c.path, {
        host,
        method: c.method,
        headers: c.headers,
        body: c.method === 'POST' ? 'x' : undefined,
      });
      const h2 = await h2Request(session, c.path, {
        authority: host,
        method: c.method,
        headers: c.headers,
        body: c.method === 'POST' ? 'x' : undefined,
      });
      const label = `${c.method ?? 'GET'} ${host}${c.path}`;
      assert.equal(h2.status, h1.status, label);
      assert.equal(h2.headers.location, h1.headers.location, label);
      assert.equal(h2.headers['x-resp'], h1.headers['x-resp'], label);
      assert.equal(h2.headers.server, 'portico', label);
      if (h1.status === 200 && c.method !== 'HEAD') {
        const b1 = JSON.parse(h1.body) as EchoBody;
        const b2 = JSON.parse(h2.body) as EchoBody;
        assert.equal(b2.path, b1.path, label);
        assert.equal(b2.host, b1.host, label);
        assert.equal(b2.method, b1.method, label);
        assert.deepEqual(b2.headers['X-Added'], b1.headers['X-Added'], label);
        assert.deepEqual(b2.headers['X-Forwarded-Proto'], ['http'], label);
        assert.match(b2.headers['X-Request-Id']?.[0] ?? '', /^[0-9a-f-]{36}$/, label);
      } else assert.equal(h2.body, h1.body, label);
    }
    const unserved = await h2Request(session, '/', { authority: 'unserved.test' });
    assert.deepEqual([unserved.status, unserved.body], [404, '']);
  });

  it('streams request bodies to an HTTP/1.1 backend, chunked or with their length', async () => {
    const big = 'z'.repeat(3 * 1024 * 1024);
    const chunked = await h2Request(session, '/mirror', { method: 'POST', body: big });
    assert.deepEqual(
      [chunked.status, chunked.body, chunked.headers['x-framing']],
      [200, String(big.length), 'chunked'],
    );
    const sized = await h2Request(session, '/mirror', {
      method: 'POST',
      body: 'hello',
      headers: { 'content-length': '5' },
    });
    assert.deepEqual([sized.body, sized.headers['x-framing']], ['5', 'length 5']);
  });

  it('passes an upload the client reset on to an HTTP/1.1 backend as broken, never as a shorter whole body', async () => {
    // Raw frames: Node's client sends END_STREAM before its RST_STREAM, which makes any upload whole.
    const { socket } = await rawH2(port);
    // The proxy's SETTINGS and connection window first, so 112 KB may be sent at once.
    await new Promise((resolve) => setTimeout(resolve, 100));
    socket.write(frame(HEADERS, END_HEADERS, 1, requestBlock('/recorder', 'example.com', 200_000)));
    // Past the body buffer (64 KiB), so the upload is streaming to the backend when the client gives up.
    for (let i = 0; i < 7; i++) socket.write(frame(DATA, 0, 1, Buffer.alloc(16_000, 1)));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const cancel = Buffer.alloc(4);
    cancel.writeUInt32BE(constants.NGHTTP2_CANCEL);
    socket.write(frame(RST_STREAM, 0, 1, cancel));
    await until(() => uploads.length === 1);
    assert.match(uploads[0]!, /^aborted /);
    socket.destroy();
  });

  it('forwards to an h2c backend and relays its trailers', async () => {
    const plain = await h2Request(session, '/h2c/x');
    assert.equal(plain.status, 200);
    assert.equal((JSON.parse(plain.body) as EchoBody).proto, 'HTTP/2.0');
    const call = await new Promise<{ trailers: Record<string, unknown> | undefined; status: number }>(
      (resolve, reject) => {
        const stream = session.request({
          ':method': 'POST',
          ':path': ECHO_METHOD,
          ':authority': 'example.com',
          'content-type': 'application/grpc',
          te: 'trailers',
        });
        let status = 0;
        stream.on('response', (h) => {
          status = Number(h[':status']);
        });
        stream.on('trailers', (t) => resolve({ trailers: t, status }));
        stream.on('end', () => resolve({ trailers: undefined, status }));
        stream.on('error', reject);
        stream.resume();
        stream.end(grpcFrame(encodeStrings(['raw'])));
      },
    );
    assert.equal(call.status, 200);
    assert.equal(call.trailers?.['grpc-status'], '0');
    // An HTTP/1.1 client of an h2c backend is served as well.
    const h1 = await httpRequest(port, '/h2c/y');
    assert.equal((JSON.parse(h1.body) as EchoBody).proto, 'HTTP/2.0');
  });

  it('relays trailers between HTTP/1.1 and HTTP/2 both ways', async () => {
    const fromH1 = await h2Request(session, '/trailing', { headers: { te: 'trailers' } });
    assert.deepEqual([fromH1.status, fromH1.body, fromH1.trailers?.['x-checksum']], [200, 'part', 'abc']);
    // A client that did not say it takes trailers gets the body without them.
    const plain = await h2Request(session, '/trailing');
    assert.deepEqual([plain.status, plain.body, plain.trailers], [200, 'part', undefined]);
    // An HTTP/1.1 client of an h2c (gRPC) backend gets its trailers in the last chunk.
    const toH1 = await new Promise<{ status: number; trailers: Record<string, string | undefined> }>(
      (resolve, reject) => {
        const req = httpRequestRaw(
          {
            host: '127.0.0.1',
            port,
            method: 'POST',
            path: ECHO_METHOD,
            headers: { host: 'example.com', 'content-type': 'application/grpc', te: 'trailers' },
            agent: false,
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve({ status: res.statusCode ?? 0, trailers: res.trailers }));
          },
        );
        req.on('error', reject);
        req.end(grpcFrame(encodeStrings(['h1'])));
      },
    );
    assert.equal(toH1.status, 200);
    assert.equal(toH1.trailers['grpc-status'], '0');
  });

  it('relays request trailers to HTTP/1.1 (chunked) and h2c backends, from h2 and HTTP/1.1 clients', async () => {
    interface Received {
      body: string;
      framing: string;
      trailers: Record<string, string>;
    }
    const sent = { 'x-digest': 'sha-256=abc', 'x-forwarded-for': '203.0.113.9', 'grpc-timeout': '1S' };
    const expected = { 'x-digest': 'sha-256=abc', 'grpc-timeout': '1S' };
    for (const path of ['/trailer-reader', '/h2c-trailer-reader']) {
      // h2 client: trailing HEADERS frame after the body.
      const h2 = await h2Request(session, path, { method: 'POST', body: 'payload', trailers: sent });
      const got = JSON.parse(h2.body) as Received;
      assert.equal(h2.status, 200, path);
      assert.equal(got.body, 'payload', path);
      assert.equal(got.framing, path === '/trailer-reader' ? 'chunked' : 'h2', path);
      // The proxy's own forwarding fields never come from a client's trailers.
      assert.deepEqual(pick(got.trailers, ['x-digest', 'grpc-timeout', 'x-forwarded-for']), expected, path);
      // HTTP/1.1 client: trailer fields in the last chunk.
      const h1 = await new Promise<Received>((resolve, reject) => {
        const req = httpRequestRaw(
          {
            host: '127.0.0.1',
            port,
            method: 'POST',
            path,
            headers: { host: 'example.com', 'transfer-encoding': 'chunked', trailer: 'x-digest' },
            agent: false,
          },
          (res) => {
            let body = '';
            res.setEncoding('utf8');
            res.on('data', (c: string) => {
              body += c;
            });
            res.on('end', () => resolve(JSON.parse(body) as Received));
          },
        );
        req.on('error', reject);
        req.write('pay');
        req.addTrailers(sent);
        req.end('load');
      });
      assert.equal(h1.body, 'payload', path);
      assert.deepEqual(pick(h1.trailers, ['x-digest', 'grpc-timeout', 'x-forwarded-for']), expected, path);
      // No trailers: the body arrives whole and nothing trails it.
      const none = await h2Request(session, path, { method: 'POST', body: 'plain' });
      assert.deepEqual(JSON.parse(none.body) as Received, {
        body: 'plain',
        framing: path === '/trailer-reader' ? 'chunked' : 'h2',
        trailers: {},
      });
    }
    // A body of known length toward an HTTP/1.1 backend has no place for trailers: it arrives whole without them.
    const sized = await h2Request(session, '/trailer-reader', {
      method: 'POST',
      headers: { 'content-length': '7' },
      body: 'payload',
      trailers: sent,
    });
    assert.deepEqual(JSON.parse(sized.body) as Received, {
      body: 'payload',
      framing: 'length 7',
      trailers: {},
    });
  });

  it('frees an h2c stream the backend answered before the upload ended', async () => {
    // The client's upload never ends; the backend's complete answer must still end the upstream stream, or
    // its only slot on the session stays taken and every later request needs a session of its own.
    const uploading = session.request({
      ':method': 'POST',
      ':path': '/h2c-early',
      ':authority': 'example.com',
    });
    // More than the proxy buffers before it asks an upstream (requestBodyBufferBytes, 64 KiB).
    uploading.write(Buffer.alloc(100 * 1024, 1));
    const status = await new Promise<number>((resolve) => {
      uploading.on('response', (h) => resolve(Number(h[':status'])));
    });
    assert.equal(status, 413);
    for (let i = 0; i < 3; i++) assert.equal((await h2Request(session, '/h2c-early')).status, 413);
    assert.equal(h2cEarlySessions, 1);
    uploading.close();
  });

  it('carries gRPC calls (@grpc/grpc-js) and answers gRPC statuses of its own', async () => {
    const client = grpcClient(port);
    try {
      const reply = await grpcEcho(client, 'hello');
      assert.deepEqual(reply, {
        message: 'hello',
        pod: 'pod-a',
        authority: 'example.com',
        path: ECHO_METHOD,
      });
      const other = grpcClient(port, 'grpc.example.com');
      await assert.rejects(grpcEcho(other, 'x'), { code: grpc.status.UNIMPLEMENTED });
      await assert.rejects(grpcEcho(client, 'x', '/empty/M'), { code: grpc.status.UNAVAILABLE });
      await assert.rejects(grpcEcho(client, 'x', '/invalid/M'), { code: grpc.status.UNAVAILABLE });
      await assert.rejects(grpcEcho(client, 'x', '/silent/M'), { code: grpc.status.DEADLINE_EXCEEDED });
      await assert.rejects(grpcEcho(client, 'x', '/refused/M'), { code: grpc.status.UNAVAILABLE });
      assert.equal((await h2Request(session, '/refused')).status, 502);
      other.close();
    } finally {
      client.close();
    }
    // Per-route metrics count HTTP/2 requests as HTTP/1.1 ones.
    const metricsPort = proxy.addresses().find((a) => a.listener === 'metrics')!.port;
    const samples = parsePrometheus((await httpRequest(metricsPort, '/metrics')).body);
    const calls = sampleValue(samples, 'portico_requests_total', { route: grpcRoute, code: '200' });
    assert.ok((calls ?? 0) >= 1, `portico_requests_total for ${grpcRoute}: ${calls}`);
  });

  it('offers h2 and http/1.1 by ALPN on HTTPS, and answers 421 for an authority its certificate was not chosen for', async () => {
    const tls = await h2Session(`https://127.0.0.1:${tlsPort}`, {
      servername: 'a.example.com',
      rejectUnauthorized: false,
    });
    try {
      assert.equal(tls.alpnProtocol, 'h2');
      const ok = await h2Request(tls, '/x', { authority: 'a.example.com' });
      assert.equal(ok.status, 200);
      assert.deepEqual((JSON.parse(ok.body) as EchoBody).headers['X-Forwarded-Proto'], ['https']);
      const misdirected = await h2Request(tls, '/x', { authority: 'b.example.com' });
      assert.equal(misdirected.status, 421);
    } finally {
      tls.close();
    }
    const other = await h2Session(`https://127.0.0.1:${tlsPort}`, {
      servername: 'b.example.com',
      rejectUnauthorized: false,
    });
    try {
      const ok = await h2Request(other, '/x', { authority: 'b.example.com:443' });
      assert.equal(ok.status, 200);
      assert.equal((JSON.parse(ok.body) as EchoBody).proto, 'HTTP/2.0');
    } finally {
      other.close();
    }
    const h1 = await new Promise<{ status: number; alpn: string | false | null }>((resolve, reject) => {
      const req = httpsRequest(
        {
          host: '127.0.0.1',
          port: tlsPort,
          path: '/x',
          servername: 'a.example.com',
          headers: { host: 'a.example.com' },
          rejectUnauthorized: false,
          agent: false,
        },
        (res) => {
          res.resume();
          const alpn = (res.socket as import('node:tls').TLSSocket).alpnProtocol;
          res.on('end', () => resolve({ status: res.statusCode ?? 0, alpn }));
        },
      );
      req.on('error', reject);
      req.end();
    });
    assert.equal(h1.status, 200);
    assert.notEqual(h1.alpn, 'h2');
  });
});

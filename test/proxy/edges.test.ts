// TLS with SNI, WebSocket pass-through, hardening against bad clients, and the admin/metrics servers.
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import { connect as netConnect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { connect as tlsConnect } from 'node:tls';
import { decodeFrames, encodeFrame, type Frame } from '../../src/echo/websocket.js';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy, type Proxy as PorticoProxy } from '../../src/proxy/index.js';
import { selfSigned } from '../support/certs.js';
import { fleet, forward, listener, route, upstream, vhost } from '../support/fleet.js';
import { closeServer, type EchoBody, httpRequest, startEcho } from '../support/http.js';

/** Sends raw bytes, returns everything the server sends until it closes the connection. */
function rawExchange(port: number, data: string, writeDelayMs = 0): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = netConnect({ host: '127.0.0.1', port });
    let out = '';
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => {
      out += c;
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(out));
    if (writeDelayMs === 0) socket.write(data);
    else setTimeout(() => socket.write(data), writeDelayMs);
  });
}

function readFrames(socket: Socket, count: number): Promise<Frame[]> {
  return new Promise((resolve) => {
    let buffer: Buffer = Buffer.alloc(0);
    const frames: Frame[] = [];
    const onData = (chunk: Buffer): void => {
      const decoded = decodeFrames(Buffer.concat([buffer, chunk]));
      buffer = decoded.rest;
      frames.push(...decoded.frames);
      if (frames.length >= count) {
        socket.off('data', onData);
        resolve(frames);
      }
    };
    socket.on('data', onData);
  });
}

describe('proxy edges', () => {
  let proxy: PorticoProxy;
  let echoServer: Server;
  const port = (name: string) => proxy.addresses().find((a) => a.listener === name)!.port;
  const certA = selfSigned('a.example.com', ['a.example.com']);
  const certWild = selfSigned('*.example.com', ['*.example.com']);
  const certDefault = selfSigned('default.test', ['default.test']);

  before(async () => {
    const echo = await startEcho('a');
    echoServer = echo.server;
    const http = vhost(80, '*', [route(forward(['default/a:80']))]);
    const https = vhost(443, '*', [route(forward(['default/a:80']))]);
    const secrets = [
      { name: 'default/a', ...certA },
      { name: 'default/wild', ...certWild },
      { name: 'default/fallback', ...certDefault },
    ];
    const tls = {
      certificates: [
        { hostnames: ['a.example.com'], secrets: ['default/a'] },
        { hostnames: ['*.example.com'], secrets: ['default/wild'] },
        { hostnames: ['*'], secrets: ['default/fallback'] },
      ],
    };
    proxy = createProxy({
      bindAddress: '127.0.0.1',
      portMap: () => 0,
      log: discardingLogger,
      adminAddress: '127.0.0.1:0',
      metricsAddress: '127.0.0.1:0',
      limits: { maxHeaderSize: 4096, maxHeadersCount: 20, headersTimeoutMs: 300 },
    });
    await proxy.started;
    const outcome = await proxy.apply(
      fleet(
        [
          { listener: listener(80), vhosts: [http] },
          { listener: listener(443, tls), vhosts: [https] },
        ],
        [upstream('default/a:80', [echo.port])],
        secrets,
      ),
      'v-test',
    );
    assert.deepEqual(outcome, { ok: true, listenerErrors: [] });
  });
  after(async () => {
    await proxy.close();
    await closeServer(echoServer);
  });

  const peerCertificateCn = (servername: string | undefined): Promise<string> =>
    new Promise((resolve, reject) => {
      const socket = tlsConnect({
        host: '127.0.0.1',
        port: port('port-443'),
        rejectUnauthorized: false,
        ...(servername === undefined ? {} : { servername }),
      });
      socket.on('secureConnect', () => {
        resolve(String(socket.getPeerCertificate().subject.CN));
        socket.destroy();
      });
      socket.on('error', reject);
    });

  it('selects certificates by SNI: exact, then wildcard, then the default', async () => {
    assert.equal(await peerCertificateCn('a.example.com'), 'a.example.com');
    assert.equal(await peerCertificateCn('b.example.com'), '*.example.com');
    assert.equal(await peerCertificateCn('other.test'), 'default.test');
    assert.equal(await peerCertificateCn(undefined), 'default.test');
  });

  it('rotates certificates on apply without rebinding the listener', async () => {
    const before = port('port-443');
    const rotated = selfSigned('rotated.test', ['rotated.test']);
    const https = vhost(443, '*', [route(forward(['default/a:80']))]);
    const config = fleet(
      [
        {
          listener: listener(443, {
            certificates: [{ hostnames: ['*'], secrets: ['default/fallback'] }],
          }),
          vhosts: [https],
        },
      ],
      [upstream('default/a:80', [1])],
      [{ name: 'default/fallback', ...rotated }],
    );
    const other = createProxy({ bindAddress: '127.0.0.1', portMap: () => 0, log: discardingLogger });
    try {
      await other.apply(config);
      const otherPort = other.addresses()[0]!.port;
      const cn = (): Promise<string> =>
        new Promise((resolve, reject) => {
          const socket = tlsConnect({
            host: '127.0.0.1',
            port: otherPort,
            rejectUnauthorized: false,
            servername: 'x.test',
          });
          socket.on('secureConnect', () => {
            resolve(String(socket.getPeerCertificate().subject.CN));
            socket.destroy();
          });
          socket.on('error', reject);
        });
      assert.equal(await cn(), 'rotated.test');
      config.secrets[0] = { name: 'default/fallback', ...certDefault };
      assert.ok((await other.apply(config)).ok);
      assert.equal(other.addresses()[0]!.port, otherPort);
      assert.equal(await cn(), 'default.test');
    } finally {
      await other.close();
    }
    assert.equal(port('port-443'), before);
  });

  it('forwards HTTPS requests with x-forwarded-proto https', async () => {
    const body = await new Promise<string>((resolve, reject) => {
      const socket = tlsConnect({
        host: '127.0.0.1',
        port: port('port-443'),
        servername: 'a.example.com',
        ca: certA.certificatePem,
      });
      let out = '';
      socket.setEncoding('utf8');
      socket.on('data', (c: string) => {
        out += c;
      });
      socket.on('end', () => resolve(out));
      socket.on('error', reject);
      socket.write('GET /tls HTTP/1.1\r\nhost: a.example.com\r\nconnection: close\r\n\r\n');
    });
    assert.match(body, /^HTTP\/1\.1 200/);
    const echo = JSON.parse(body.slice(body.indexOf('\r\n\r\n') + 4)) as EchoBody;
    assert.deepEqual(echo.headers['X-Forwarded-Proto'], ['https']);
  });

  it('passes WebSocket upgrades through in both directions', async () => {
    const socket = netConnect({ host: '127.0.0.1', port: port('port-80') });
    const head = await new Promise<string>((resolve, reject) => {
      socket.once('error', reject);
      let got: Buffer = Buffer.alloc(0);
      const onData = (chunk: Buffer): void => {
        got = Buffer.concat([got, chunk]);
        const end = got.indexOf('\r\n\r\n');
        if (end === -1) return;
        socket.off('data', onData);
        if (got.length > end + 4) socket.unshift(got.subarray(end + 4));
        resolve(got.subarray(0, end).toString());
      };
      socket.on('data', onData);
      socket.write(
        'GET /ws HTTP/1.1\r\nhost: ws.test\r\nupgrade: websocket\r\nconnection: Upgrade\r\n' +
          'sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nsec-websocket-version: 13\r\n\r\n',
      );
    });
    assert.match(head, /^HTTP\/1\.1 101/);
    assert.match(head, /sec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK\+xOo=/i);
    const frames = readFrames(socket, 2);
    socket.write(encodeFrame(0x1, Buffer.from('hello'), true));
    socket.write(encodeFrame(0x2, Buffer.alloc(70_000, 7), true));
    const [text, binary] = await frames;
    assert.equal(text!.payload.toString(), 'hello');
    assert.equal(binary!.payload.length, 70_000);
    socket.destroy();
  });

  it('answers a malformed request with 400 and closes the connection', async () => {
    const reply = await rawExchange(port('port-80'), 'GET / HTTP/1.1\r\nhost: x\r\nbad header line\r\n\r\n');
    assert.match(reply, /^HTTP\/1\.1 400 /);
    assert.match(reply, /connection: close/i);
    const garbage = await rawExchange(port('port-80'), '\x00\x01\x02 nonsense\r\n\r\n');
    assert.match(garbage, /^HTTP\/1\.1 400 /);
    // The proxy is still serving.
    assert.equal((await httpRequest(port('port-80'), '/')).status, 200);
  });

  it('refuses oversized heads and too many headers with 431', async () => {
    const big = await rawExchange(
      port('port-80'),
      `GET / HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(8000)}\r\n\r\n`,
    );
    assert.match(big, /^HTTP\/1\.1 431 /);
    const headers: Record<string, string> = {};
    for (let i = 0; i < 30; i++) headers[`x-h${i}`] = 'v';
    assert.equal((await httpRequest(port('port-80'), '/', { headers })).status, 431);
  });

  it('cuts off a client that is too slow to send its headers', async () => {
    // Sends half a request head and then nothing: the headers timeout (300 ms) must end it.
    const reply = await rawExchange(port('port-80'), 'GET / HTTP/1.1\r\nhost: x\r\n');
    assert.match(reply, /^HTTP\/1\.1 408 /);
  });

  it('closes connections beyond the connection limit', async () => {
    const limited = createProxy({
      bindAddress: '127.0.0.1',
      portMap: () => 0,
      log: discardingLogger,
      limits: { maxConnections: 1 },
    });
    try {
      const http = vhost(80, '*', [route({ type: 'DirectResponse', status: 204 })]);
      await limited.apply(fleet([{ listener: listener(80), vhosts: [http] }]));
      const limitedPort = limited.addresses()[0]!.port;
      const first = netConnect({ host: '127.0.0.1', port: limitedPort });
      await new Promise((resolve) => first.once('connect', resolve));
      await new Promise((resolve) => setTimeout(resolve, 50));
      const second = await rawExchange(limitedPort, 'GET / HTTP/1.1\r\nhost: x\r\n\r\n').catch(
        (error: NodeJS.ErrnoException) => error.code ?? 'error',
      );
      assert.ok(
        second === '' || second === 'ECONNRESET',
        `the second connection is closed unanswered: ${second}`,
      );
      first.destroy();
    } finally {
      await limited.close();
    }
  });

  it('serves the admin API: version, redacted config dump, stats', async () => {
    const admin = port('admin');
    const host = `127.0.0.1:${admin}`;
    const version = JSON.parse((await httpRequest(admin, '/version', { host })).body) as { version: string };
    assert.equal(version.version, 'v-test');
    const dump = await httpRequest(admin, '/config_dump', { host });
    assert.equal(dump.status, 200);
    assert.ok(!dump.body.includes('PRIVATE KEY'), 'private keys are redacted');
    assert.ok(dump.body.includes('BEGIN CERTIFICATE'));
    const stats = JSON.parse((await httpRequest(admin, '/stats', { host })).body) as {
      inFlight: number;
      ready: boolean;
    };
    assert.equal(stats.inFlight, 0);
    assert.equal(stats.ready, true);
  });

  it('exports Prometheus metrics', async () => {
    await httpRequest(port('port-80'), '/metrics-probe');
    const text = (await httpRequest(port('metrics'), '/metrics')).body;
    assert.match(
      text,
      /portico_requests_total\{listener="port-80",route="default\/r\d+\/rule\/0\/match\/0",code="200"\} \d+/,
    );
    assert.match(text, /portico_request_duration_seconds_bucket\{listener="port-80",.*le="\+Inf"\} \d+/);
    assert.match(text, /portico_active_connections\{listener="port-80"\} \d+/);
    assert.match(text, /portico_requests_in_flight 0/);
  });
});

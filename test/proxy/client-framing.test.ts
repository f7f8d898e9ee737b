// Request framing toward upstreams cannot be changed by a client's headers: Connection may not remove
// Content-Length, Transfer-Encoding or Host (request smuggling), and a pooled upstream connection stays in step.
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy, type Proxy as PorticoProxy } from '../../src/proxy/index.js';
import { forward, route, simpleFleet, upstream, vhost } from '../support/fleet.js';
import { closeServer, listen } from '../support/http.js';

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** Sends raw bytes; resolves with what came back once `until` matches (or the server closed). */
function raw(port: number, data: string, until: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    let out = '';
    socket.setEncoding('latin1');
    socket.on('data', (c: string) => {
      out += c;
      if (until.test(out)) {
        socket.destroy();
        resolve(out);
      }
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(out));
    socket.write(data);
  });
}

describe('proxy request framing toward upstreams', { timeout: 10_000 }, () => {
  let proxy: PorticoProxy;
  let backend: Server;
  let port: number;
  const seen: Seen[] = [];

  before(async () => {
    // Records every request it parses; answers with its path (after ?delay ms).
    backend = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        seen.push({
          method: req.method ?? '',
          url: req.url ?? '',
          headers: req.headers,
          body: Buffer.concat(chunks).toString(),
        });
        const delay = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('delay') ?? 0);
        setTimeout(() => res.end(`path ${req.url}`), delay);
      });
    });
    const backendPort = await listen(backend);
    proxy = createProxy({ bindAddress: '127.0.0.1', portMap: () => 0, log: discardingLogger });
    await proxy.started;
    const v = vhost(80, 'a.test', [route(forward(['default/b:80']))]);
    await proxy.apply(simpleFleet([v], [upstream('default/b:80', [backendPort])]), 'v1');
    port = proxy.addresses()[0]!.port;
  });
  after(async () => {
    await proxy.close();
    await closeServer(backend);
  });

  it('forwards the body and its content-length even when Connection lists content-length', async () => {
    seen.length = 0;
    const smuggled = 'GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n';
    const reply = await raw(
      port,
      `POST /a HTTP/1.1\r\nHost: a.test\r\nConnection: content-length\r\nContent-Length: ${smuggled.length}\r\n\r\n${smuggled}`,
      /path \/a$/,
    );
    assert.match(reply, /^HTTP\/1\.1 200 /);
    // Give a smuggled second request time to reach the backend, if there were one.
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.deepEqual(
      seen.map((s) => [s.method, s.url, s.headers['content-length'], s.body]),
      [['POST', '/a', String(smuggled.length), smuggled]],
    );
  });

  it('forwards a chunked body as chunked even when Connection lists transfer-encoding', async () => {
    seen.length = 0;
    const smuggled = 'GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n';
    const chunk = `${smuggled.length.toString(16)}\r\n${smuggled}\r\n0\r\n\r\n`;
    const reply = await raw(
      port,
      `POST /b HTTP/1.1\r\nHost: a.test\r\nConnection: transfer-encoding\r\nTransfer-Encoding: chunked\r\n\r\n${chunk}`,
      /path \/b$/,
    );
    assert.match(reply, /^HTTP\/1\.1 200 /);
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.deepEqual(
      seen.map((s) => [s.method, s.url, s.headers['transfer-encoding'], s.body]),
      [['POST', '/b', 'chunked', smuggled]],
    );
  });

  it('keeps the client Host when Connection lists host', async () => {
    seen.length = 0;
    const reply = await raw(port, 'GET /h HTTP/1.1\r\nHost: a.test\r\nConnection: host\r\n\r\n', /path \/h$/);
    assert.match(reply, /^HTTP\/1\.1 200 /);
    assert.equal(seen[0]?.headers.host, 'a.test');
  });

  it('sends one content-length for a repeated or listed identical value', async () => {
    seen.length = 0;
    await raw(port, 'POST /l HTTP/1.1\r\nHost: a.test\r\nContent-Length: 3, 3\r\n\r\nabc', /path \/l$/);
    await raw(
      port,
      'POST /m HTTP/1.1\r\nHost: a.test\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc',
      /path \/m$/,
    );
    assert.deepEqual(
      seen.map((s) => [s.url, s.headers['content-length'], s.body]),
      [
        ['/l', '3', 'abc'],
        ['/m', '3', 'abc'],
      ],
    );
  });

  it('does not leave a smuggled request on a pooled upstream connection for the next client', async () => {
    const smuggled = 'GET /poison?delay=200 HTTP/1.1\r\nHost: a.test\r\n\r\n';
    const first = raw(
      port,
      `POST /p HTTP/1.1\r\nHost: a.test\r\nConnection: content-length\r\nContent-Length: ${smuggled.length}\r\n\r\n${smuggled}`,
      /path \/p$/,
    );
    assert.match(await first, /path \/p$/);
    // A different client right after: it must get its own answer, not the smuggled one's.
    const victim = await raw(port, 'GET /victim HTTP/1.1\r\nHost: a.test\r\n\r\n', /path \/\S+$/);
    assert.match(victim, /path \/victim$/);
  });

  it('routes an absolute-form request by its authority and forwards it in origin-form', async () => {
    seen.length = 0;
    const reply = await raw(
      port,
      'GET http://a.test/abs?x=1 HTTP/1.1\r\nHost: other.test\r\n\r\n',
      /path \/\S+$/,
    );
    assert.match(reply, /^HTTP\/1\.1 200 /);
    assert.deepEqual([seen[0]?.url, seen[0]?.headers.host], ['/abs?x=1', 'a.test']);
  });
});

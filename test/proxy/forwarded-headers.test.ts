// Forwarding headers a client sends are trusted the same way on every path to a backend: plain, filtered, and
// upgraded. The proxy is the edge: the scheme is its own, the client address is appended, spoofed x-portico-*,
// forwarded and other x-forwarded-* headers never reach a backend.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy, type Proxy as PorticoProxy } from '../../src/proxy/index.js';
import { forward, route, simpleFleet, upstream, vhost } from '../support/fleet.js';
import { closeServer, type EchoBody, httpRequest, listen, startEcho } from '../support/http.js';

const SPOOFED = {
  'X-Forwarded-Proto': 'https',
  'X-Forwarded-For': '203.0.113.7',
  'X-Forwarded-Host': 'evil.example',
  'X-Forwarded-Client-Cert': 'Hash=forged',
  Forwarded: 'for=203.0.113.7;proto=https',
  'X-Portico-External-Address': '198.51.100.1',
  'X-Portico-Expected-Rq-Timeout-Ms': '1',
  'X-Portico-Anything': 'forged',
  'X-Request-Id': 'not one id; it has spaces',
};

/** What a backend must see, whatever the path: lower-case name → values. */
function assertTrusted(headers: Record<string, string[]>): void {
  assert.deepEqual(headers['x-forwarded-proto'], ['http']);
  assert.deepEqual(headers['x-forwarded-for'], ['203.0.113.7, 127.0.0.1']);
  assert.deepEqual(headers['x-portico-internal'], ['true']);
  assert.deepEqual(headers['x-portico-expected-rq-timeout-ms'], ['15000']);
  assert.equal(headers['x-request-id']?.length, 1);
  assert.match(headers['x-request-id']![0]!, /^[0-9a-f-]{36}$/);
  for (const name of [
    'x-forwarded-host',
    'x-forwarded-client-cert',
    'forwarded',
    'x-portico-external-address',
    'x-portico-anything',
  ]) {
    assert.equal(headers[name], undefined, `${name} must not reach the backend`);
  }
}

function lowerCased(headers: Record<string, string[]>): Record<string, string[]> {
  return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
}

function headerLists(req: IncomingMessage): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]!.toLowerCase();
    out[name] = [...(out[name] ?? []), req.rawHeaders[i + 1]!];
  }
  return out;
}

describe('forwarded headers', () => {
  let proxy: PorticoProxy;
  let port: number;
  const closers: (() => Promise<void>)[] = [];

  before(async () => {
    const echo = await startEcho('a');
    // Accepts upgrades and reports, in the 101 response, the headers it was sent.
    const upgrades = createServer();
    upgrades.on('upgrade', (req: IncomingMessage, socket) => {
      const seen = Buffer.from(JSON.stringify(headerLists(req))).toString('base64');
      socket.end(
        `HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\nx-seen: ${seen}\r\n\r\n`,
      );
    });
    const upgradePort = await listen(upgrades);
    closers.push(
      () => closeServer(echo.server),
      () => closeServer(upgrades),
    );
    proxy = createProxy({ bindAddress: '127.0.0.1', portMap: () => 0, log: discardingLogger });
    const filter = {
      type: 'RequestHeaderModifier' as const,
      headers: { set: [{ name: 'x-filtered', value: 'yes' }], add: [], remove: [] },
    };
    const config = simpleFleet(
      [
        vhost(80, 'example.com', [
          route(forward(['default/a:80']), { path: { type: 'PathPrefix', value: '/plain' } }),
          route(forward(['default/a:80']), { path: { type: 'PathPrefix', value: '/filtered' } }, [filter]),
          route(forward(['default/up:80']), { path: { type: 'PathPrefix', value: '/ws' } }),
          route(
            { type: 'Redirect', statusCode: 302, hostname: 'other.example.com' },
            {
              path: { type: 'PathPrefix', value: '/moved' },
            },
          ),
        ]),
      ],
      [upstream('default/a:80', [echo.port]), upstream('default/up:80', [upgradePort])],
    );
    assert.equal((await proxy.apply(config)).ok, true);
    port = proxy.addresses().find((x) => x.listener === 'port-80')!.port;
  });
  after(async () => {
    await proxy.close();
    for (const close of closers) await close();
  });

  it('on a route without filters', async () => {
    const reply = await httpRequest(port, '/plain', { host: 'example.com', headers: SPOOFED });
    assertTrusted(lowerCased((JSON.parse(reply.body) as EchoBody).headers));
  });

  it('on a route with request filters', async () => {
    const reply = await httpRequest(port, '/filtered', { host: 'example.com', headers: SPOOFED });
    const headers = lowerCased((JSON.parse(reply.body) as EchoBody).headers);
    assertTrusted(headers);
    assert.deepEqual(headers['x-filtered'], ['yes']);
  });

  it('on an upgrade (WebSocket)', async () => {
    const socket = connect({ host: '127.0.0.1', port });
    const spoofed = Object.entries(SPOOFED)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('');
    socket.write(
      `GET /ws HTTP/1.1\r\nhost: example.com\r\nupgrade: websocket\r\nconnection: Upgrade\r\n${spoofed}\r\n`,
    );
    let text = '';
    socket.setEncoding('utf8');
    for await (const chunk of socket) {
      text += chunk as string;
      if (text.includes('\r\n\r\n')) break;
    }
    socket.destroy();
    const seen = /x-seen: (\S+)/.exec(text)?.[1];
    assert.ok(seen !== undefined, text);
    assertTrusted(JSON.parse(Buffer.from(seen, 'base64').toString('utf8')) as Record<string, string[]>);
  });

  it('on a redirect: the scheme is the listener’s, not a client header’s', async () => {
    const reply = await httpRequest(port, '/moved/x', { host: 'example.com', headers: SPOOFED });
    assert.equal(reply.status, 302);
    assert.equal(reply.headers.location, 'http://other.example.com/moved/x');
  });

  it('keeps one plain client x-request-id, so tracing goes on across hops', async () => {
    const reply = await httpRequest(port, '/plain', {
      host: 'example.com',
      headers: { 'x-request-id': '7f0c2a10-4bd6-4d54-9a3e-1c2f0e8d9b11' },
    });
    const headers = lowerCased((JSON.parse(reply.body) as EchoBody).headers);
    assert.deepEqual(headers['x-request-id'], ['7f0c2a10-4bd6-4d54-9a3e-1c2f0e8d9b11']);
  });
});

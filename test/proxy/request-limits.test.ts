// Request limits per listener and route through a real proxy: a body over the limit gets 413 whether its
// content-length says so (refused before it is read) or it streams past the limit (chunked over HTTP/1.1, DATA
// frames over HTTP/2); a route's limit overrides its listener's; too many header fields get 431.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import type { ListenerLimits } from '../../src/ir/fleet-config.js';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy, type Proxy as PorticoProxy } from '../../src/proxy/index.js';
import { fleet, forward, listener, route, upstream, vhost } from '../support/fleet.js';
import { h2Request, h2Session } from '../support/h2.js';
import { closeServer, httpRequest, startEcho } from '../support/http.js';

/** A chunked POST (no content-length) of `size` bytes in chunks of 4; the status the proxy answered. */
function chunkedPost(port: number, path: string, size: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, method: 'POST', headers: { host: 'example.com' } },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', reject);
    for (let sent = 0; sent < size; sent += 4) req.write('abcd'.slice(0, Math.min(4, size - sent)));
    req.end();
  });
}

describe('request limits', () => {
  let proxy: PorticoProxy;
  let port: number;
  let closeEcho: () => Promise<void>;

  before(async () => {
    const echo = await startEcho('a');
    closeEcho = () => closeServer(echo.server);
    proxy = createProxy({ bindAddress: '127.0.0.1', portMap: () => 0, log: discardingLogger });
    const limits: ListenerLimits = { maxRequestBodyBytes: 16, maxHeaders: 20, maxHeaderBytes: 2048 };
    const small = {
      ...route(forward(['default/a:80']), { path: { type: 'PathPrefix', value: '/small' } }),
      maxRequestBodyBytes: 8,
    };
    const config = fleet(
      [
        {
          listener: { ...listener(80), limits },
          vhosts: [vhost(80, '*', [small, route(forward(['default/a:80']))])],
        },
      ],
      [upstream('default/a:80', [echo.port])],
    );
    assert.deepEqual(await proxy.apply(config), { ok: true, listenerErrors: [] });
    port = proxy.addresses().find((a) => a.listener === 'port-80')!.port;
  });

  after(async () => {
    await proxy.close();
    await closeEcho();
  });

  it('HTTP/1.1: 413 on a content-length over the listener limit, 200 within it', async () => {
    assert.equal((await httpRequest(port, '/', { method: 'POST', body: 'x'.repeat(16) })).status, 200);
    const over = await httpRequest(port, '/', { method: 'POST', body: 'x'.repeat(17) });
    assert.equal(over.status, 413);
    assert.equal(over.headers.connection, 'close');
  });

  it("HTTP/1.1: a route's own limit wins over its listener's", async () => {
    assert.equal((await httpRequest(port, '/small', { method: 'POST', body: 'x'.repeat(8) })).status, 200);
    assert.equal((await httpRequest(port, '/small', { method: 'POST', body: 'x'.repeat(9) })).status, 413);
  });

  it('HTTP/1.1: a chunked body is stopped with 413 once it streams past the limit', async () => {
    assert.equal(await chunkedPost(port, '/', 16), 200);
    assert.equal(await chunkedPost(port, '/', 4000), 413);
    assert.equal(await chunkedPost(port, '/small', 12), 413);
  });

  it('HTTP/2: 413 on content-length and on DATA past the limit', async () => {
    const session = await h2Session(`http://127.0.0.1:${port}`);
    try {
      const within = await h2Request(session, '/', { method: 'POST', body: 'x'.repeat(16) });
      assert.equal(within.status, 200);
      const declared = await h2Request(session, '/', {
        method: 'POST',
        headers: { 'content-length': '17' },
        body: 'x'.repeat(17),
      });
      assert.equal(declared.status, 413);
      const streamed = await h2Request(session, '/small', { method: 'POST', body: 'x'.repeat(4000) });
      assert.equal(streamed.status, 413);
    } finally {
      session.destroy();
    }
  });

  it('HTTP/1.1: more header fields than the listener allows get 431', async () => {
    const many = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`x-h${i}`, 'v']));
    assert.equal((await httpRequest(port, '/', { headers: many })).status, 431);
    const few = Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`x-h${i}`, 'v']));
    assert.equal((await httpRequest(port, '/', { headers: few })).status, 200);
  });

  it('HTTP/2: a header list over the size gets 431; over the count, the stream is refused (ENHANCE_YOUR_CALM)', async () => {
    const session = await h2Session(`http://127.0.0.1:${port}`);
    session.on('error', () => {});
    try {
      const big = await h2Request(session, '/', { headers: { 'x-big': 'x'.repeat(3000) } });
      assert.equal(big.status, 431);
    } finally {
      session.destroy();
    }
    const again = await h2Session(`http://127.0.0.1:${port}`);
    again.on('error', () => {});
    try {
      const many = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`x-h${i}`, 'v']));
      const refused = await h2Request(again, '/', { headers: many });
      assert.deepEqual([refused.status, refused.rstCode], [0, 11]);
    } finally {
      again.destroy();
    }
  });
});

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer, request, type Server } from 'node:http';
import { type AddressInfo, createServer as createNetServer, type Server as NetServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy, type Proxy as PorticoProxy } from '../../src/proxy/index.js';
import { forward, route, simpleFleet, upstream, vhost } from '../support/fleet.js';
import { closeServer, type EchoBody, freePort, httpRequest, listen, startEcho } from '../support/http.js';

describe('proxy data plane', () => {
  let proxy: PorticoProxy;
  let port: number;
  const servers: Server[] = [];
  const netServers: NetServer[] = [];
  let aborted: Promise<void>;

  before(async () => {
    const a = await startEcho('a');
    const b = await startEcho('b');
    servers.push(a.server, b.server);
    // Echoes the request body's length and hash: proves streaming both ways without loss.
    const sink = createServer((req, res) => {
      const hash = createHash('sha256');
      let bytes = 0;
      req.on('data', (c: Buffer) => {
        bytes += c.length;
        hash.update(c);
      });
      req.on('end', () => res.end(JSON.stringify({ bytes, sha256: hash.digest('hex') })));
    });
    // Never answers; resolves `aborted` when the proxy cancels the request.
    let markAborted: () => void = () => {};
    aborted = new Promise((resolve) => {
      markAborted = resolve;
    });
    const hang = createServer((req) => req.on('close', markAborted));
    // Answers with a header line no HTTP implementation may relay.
    const broken = createNetServer((socket) => {
      socket.once('data', () =>
        socket.end('HTTP/1.1 200 OK\r\nx-bad: a\u0001b\r\ncontent-length: 0\r\n\r\n'),
      );
    });
    await new Promise<void>((resolve) => broken.listen({ host: '127.0.0.1', port: 0 }, resolve));
    const brokenPort = (broken.address() as AddressInfo).port;
    netServers.push(broken);
    // Accepts the request and resets the connection without answering.
    const reset = createServer((req) => req.socket.destroy());
    servers.push(sink, hang, reset);
    const resetPort = await listen(reset);
    const sinkPort = await listen(sink);
    const hangPort = await listen(hang);
    const deadPort = await freePort();
    const upstreams = [
      upstream('default/a:80', [a.port]),
      upstream('default/b:80', [b.port]),
      upstream('default/ab:80', [a.port, b.port]),
      upstream('default/sink:80', [sinkPort]),
      upstream('default/hang:80', [hangPort]),
      upstream('default/dead:80', [deadPort]),
      upstream('default/empty:80', []),
      upstream('default/reset:80', [resetPort]),
      upstream('default/broken:80', [brokenPort]),
    ];
    const header = (name: string, value: string, type: 'Exact' | 'RegularExpression' = 'Exact') => ({
      type,
      name,
      value,
    });
    const config = simpleFleet(
      [
        vhost(80, 'example.com', [
          route(forward(['default/a:80']), { path: { type: 'Exact', value: '/exact' } }),
          route(forward(['default/b:80']), { path: { type: 'RegularExpression', value: '/re/[0-9]+' } }),
          route(forward(['default/b:80']), {
            path: { type: 'PathPrefix', value: '/hdr' },
            headers: [header('x-env', 'canary')],
          }),
          route(forward(['default/b:80']), {
            path: { type: 'PathPrefix', value: '/hdr' },
            headers: [header('x-ver', 'v[0-9]+', 'RegularExpression')],
          }),
          route(forward(['default/a:80']), { path: { type: 'PathPrefix', value: '/hdr' } }),
          route(forward(['default/b:80']), {
            path: { type: 'PathPrefix', value: '/q' },
            queryParams: [header('tier', 'gold')],
          }),
          route(forward(['default/b:80']), {
            path: { type: 'PathPrefix', value: '/q' },
            queryParams: [header('id', '[a-f]+', 'RegularExpression')],
          }),
          route(forward(['default/a:80']), { path: { type: 'PathPrefix', value: '/q' } }),
          route(forward(['default/b:80']), { path: { type: 'PathPrefix', value: '/m' }, method: 'POST' }),
          route(forward(['default/a:80']), { path: { type: 'PathPrefix', value: '/m' } }),
          route(
            forward([
              { weight: 3, cluster: 'default/a:80', filters: [] },
              { weight: 1, cluster: 'default/b:80', filters: [] },
              { weight: 0, cluster: 'default/empty:80', filters: [] },
            ]),
            {
              path: { type: 'PathPrefix', value: '/weighted' },
            },
          ),
          route(forward([{ weight: 1, filters: [] }]), { path: { type: 'PathPrefix', value: '/invalid' } }),
          route(
            { type: 'DirectResponse', status: 500 },
            { path: { type: 'PathPrefix', value: '/nobackends' } },
          ),
          route(forward(['default/empty:80']), { path: { type: 'PathPrefix', value: '/empty' } }),
          route(forward(['default/dead:80']), { path: { type: 'PathPrefix', value: '/dead' } }),
          route(forward(['default/reset:80']), { path: { type: 'PathPrefix', value: '/reset' } }),
          route(forward(['default/broken:80']), { path: { type: 'PathPrefix', value: '/broken' } }),
          route(forward(['default/a:80'], { timeoutMs: 200 }), {
            path: { type: 'PathPrefix', value: '/slow' },
          }),
          route(forward(['default/a:80'], { backendTimeoutMs: 200 }), {
            path: { type: 'PathPrefix', value: '/bslow' },
          }),
          route(forward(['default/a:80'], { timeoutMs: 0 }), {
            path: { type: 'PathPrefix', value: '/unbounded' },
          }),
          route(forward(['default/sink:80']), { path: { type: 'PathPrefix', value: '/upload' } }),
          route(forward(['default/hang:80']), { path: { type: 'PathPrefix', value: '/hang' } }),
          route(forward(['default/a:80']), { path: { type: 'PathPrefix', value: '/mod' } }, [
            {
              type: 'RequestHeaderModifier',
              headers: {
                set: [{ name: 'x-set', value: 'new' }],
                add: [{ name: 'x-add', value: 'two' }],
                remove: ['x-remove'],
              },
            },
            {
              type: 'ResponseHeaderModifier',
              headers: { set: [{ name: 'x-resp', value: 'yes' }], add: [], remove: ['content-type'] },
            },
          ]),
          route(forward(['default/a:80']), { path: { type: 'PathPrefix', value: '/prefix/old' } }, [
            {
              type: 'URLRewrite',
              hostname: 'rewritten.example',
              path: { type: 'ReplacePrefixMatch', value: '/new' },
            },
          ]),
          route(forward(['default/a:80']), { path: { type: 'PathPrefix', value: '/full' } }, [
            { type: 'URLRewrite', path: { type: 'ReplaceFullPath', value: '/replaced' } },
          ]),
          route(
            forward([
              {
                weight: 1,
                cluster: 'default/a:80',
                filters: [
                  {
                    type: 'RequestHeaderModifier',
                    headers: { set: [{ name: 'x-backend', value: 'a' }], add: [], remove: [] },
                  },
                ],
              },
            ]),
            { path: { type: 'PathPrefix', value: '/bfilter' } },
          ),
          route(
            { type: 'Redirect', scheme: 'https', statusCode: 301 },
            { path: { type: 'PathPrefix', value: '/r/https' } },
          ),
          route(
            { type: 'Redirect', hostname: 'other.example', statusCode: 302 },
            { path: { type: 'PathPrefix', value: '/r/host' } },
          ),
          route(
            { type: 'Redirect', port: 8443, scheme: 'https', statusCode: 308 },
            { path: { type: 'PathPrefix', value: '/r/port' } },
          ),
          route(
            { type: 'Redirect', path: { type: 'ReplacePrefixMatch', value: '/moved' }, statusCode: 307 },
            { path: { type: 'PathPrefix', value: '/r/prefix' } },
          ),
          route(forward(['default/ab:80']), { path: { type: 'PathPrefix', value: '/' } }),
        ]),
        vhost(80, 'routes.example.com', [
          route(forward(['default/a:80']), { path: { type: 'Exact', value: '/only' } }),
        ]),
        vhost(80, '*.wild.example.com', [route(forward(['default/b:80']))]),
        vhost(80, '*.example.net', [route(forward(['default/a:80']))]),
      ],
      upstreams,
    );
    proxy = createProxy({ bindAddress: '127.0.0.1', portMap: () => 0, log: discardingLogger });
    const outcome = await proxy.apply(config);
    assert.deepEqual(outcome, { ok: true, listenerErrors: [] });
    port = proxy.addresses().find((a) => a.listener === 'port-80')!.port;
  });

  after(async () => {
    await proxy.close();
    await Promise.all(servers.map(closeServer));
    for (const s of netServers) s.close();
  });

  const get = (path: string, options: Parameters<typeof httpRequest>[2] = {}) =>
    httpRequest(port, path, options);
  const echo = (body: string) => JSON.parse(body) as EchoBody;

  it('forwards a matched request with the headers Portico adds both ways, path normalised, query verbatim', async () => {
    const reply = await get('/some/p%41th/x?b=2&a=%20&a=1', { headers: { 'x-forwarded-for': '10.1.1.1' } });
    assert.equal(reply.status, 200);
    assert.equal(reply.headers.server, 'portico');
    assert.ok(reply.headers.date);
    assert.match(String(reply.headers['x-portico-upstream-service-time']), /^\d+$/);
    const body = echo(reply.body);
    // The escape of an unreserved character is decoded (path-normalization.ts); the query is not touched.
    assert.equal(body.path, '/some/pAth/x?b=2&a=%20&a=1');
    assert.equal(body.host, 'example.com');
    assert.deepEqual(body.headers['X-Forwarded-For'], ['10.1.1.1, 127.0.0.1']);
    assert.deepEqual(body.headers['X-Forwarded-Proto'], ['http']);
    assert.match(body.headers['X-Request-Id']![0]!, /^[0-9a-f-]{36}$/);
    assert.deepEqual(body.headers['X-Portico-Internal'], ['true']);
    assert.equal(body.headers['X-Portico-External-Address'], undefined);
    assert.deepEqual(body.headers['X-Portico-Expected-Rq-Timeout-Ms'], ['15000']);
  });

  it('relays repeated response headers (set-cookie) and replaces the upstream server header', async () => {
    const reply = await get('/', {
      headers: { 'x-echo-set-header': 'Set-Cookie:a=1, Set-Cookie:b=2, Server:echo' },
    });
    assert.deepEqual(reply.headers['set-cookie'], ['a=1', 'b=2']);
    assert.equal(reply.headers.server, 'portico');
  });

  it('keeps a client x-request-id and drops spoofed x-portico headers', async () => {
    const body = echo(
      (await get('/', { headers: { 'x-request-id': 'abc', 'x-portico-external-address': '1.2.3.4' } })).body,
    );
    assert.deepEqual(body.headers['X-Request-Id'], ['abc']);
    assert.equal(body.headers['X-Portico-External-Address'], undefined);
  });

  it('strips hop-by-hop headers, including those the Connection header lists', async () => {
    const body = echo(
      (
        await get('/', {
          headers: {
            connection: 'close, x-hop',
            'x-hop': '1',
            'keep-alive': 'timeout=5',
            'proxy-authorization': 'x',
            'x-kept': 'y',
          },
        })
      ).body,
    );
    assert.equal(body.headers['X-Hop'], undefined);
    assert.equal(body.headers['Keep-Alive'], undefined);
    assert.equal(body.headers['Proxy-Authorization'], undefined);
    assert.deepEqual(body.headers['X-Kept'], ['y']);
  });

  it('answers 404 with an empty body for an unknown host', async () => {
    const reply = await get('/', { host: 'unknown.test' });
    assert.equal(reply.status, 404);
    assert.equal(reply.headers['content-length'], '0');
    assert.equal(reply.body, '');
  });

  it('answers 404 with an empty body when the host matches but no route does', async () => {
    const reply = await get('/nope', { host: 'routes.example.com' });
    assert.equal(reply.status, 404);
    assert.equal(reply.headers['content-length'], '0');
    assert.equal(reply.body, '');
    assert.equal((await get('/only', { host: 'routes.example.com' })).status, 200);
  });

  it('ignores the Host port and case', async () => {
    assert.equal((await get('/only', { host: 'ROUTES.Example.COM:8080' })).status, 200);
  });

  it('matches wildcard hosts on one or more labels, not the bare suffix', async () => {
    assert.equal(echo((await get('/', { host: 'a.b.wild.example.com' })).body).pod, 'b');
    assert.equal(echo((await get('/', { host: 'x.example.net' })).body).pod, 'a');
    assert.equal((await get('/', { host: 'example.net' })).status, 404);
  });

  it('matches exact, prefix (whole segments) and regular expression paths', async () => {
    assert.equal(echo((await get('/exact')).body).pod, 'a');
    assert.equal(echo((await get('/re/123')).body).pod, 'b');
    assert.equal(echo((await get('/hdr/x')).body).pod, 'a');
    // `/prefix/old` must not match `/prefix/older`: that goes to the catch-all, unrewritten.
    assert.equal(echo((await get('/prefix/older')).body).path, '/prefix/older');
    assert.equal(echo((await get('/prefix/old/')).body).path, '/new/');
  });

  it('matches headers exactly and by regular expression', async () => {
    assert.equal(echo((await get('/hdr', { headers: { 'x-env': 'canary' } })).body).pod, 'b');
    assert.equal(echo((await get('/hdr', { headers: { 'x-ver': 'v12' } })).body).pod, 'b');
    assert.equal(echo((await get('/hdr', { headers: { 'x-ver': 'v1x' } })).body).pod, 'a');
    assert.equal(echo((await get('/hdr', { headers: { 'x-env': 'Canary' } })).body).pod, 'a');
  });

  it('matches query parameters exactly and by regular expression', async () => {
    assert.equal(echo((await get('/q?tier=gold')).body).pod, 'b');
    assert.equal(echo((await get('/q?id=beef')).body).pod, 'b');
    assert.equal(echo((await get('/q?id=xyz&tier=silver')).body).pod, 'a');
  });

  it('matches the method', async () => {
    assert.equal(echo((await get('/m', { method: 'POST', body: 'x' })).body).pod, 'b');
    assert.equal(echo((await get('/m')).body).pod, 'a');
  });

  it('splits traffic by weight (never to weight 0) within 5 % over 1000 requests', async () => {
    const counts: Record<string, number> = {};
    for (let i = 0; i < 1000; i++) {
      const reply = await get('/weighted');
      assert.equal(reply.status, 200);
      const pod = echo(reply.body).pod;
      counts[pod] = (counts[pod] ?? 0) + 1;
    }
    assert.ok(Math.abs((counts.a ?? 0) - 750) <= 50, JSON.stringify(counts));
    assert.ok(Math.abs((counts.b ?? 0) - 250) <= 50, JSON.stringify(counts));
  });

  it('balances across the endpoints of a cluster', async () => {
    const pods = new Set<string>();
    for (let i = 0; i < 4; i++) pods.add(echo((await get('/')).body).pod);
    assert.deepEqual([...pods].sort(), ['a', 'b']);
  });

  it('answers 500 for an invalid backend and a rule without backends', async () => {
    assert.equal((await get('/invalid')).status, 500);
    assert.equal((await get('/nobackends')).status, 500);
  });

  it('answers 503 when the Service has no ready endpoints', async () => {
    assert.equal((await get('/empty')).status, 503);
  });

  it('answers 502 when the upstream refuses the connection', async () => {
    assert.equal((await get('/dead')).status, 502);
  });

  it('answers 502 for an upstream response that is not valid HTTP, and keeps serving', async () => {
    assert.equal((await get('/broken')).status, 502);
    assert.equal((await get('/exact')).status, 200);
  });

  it('answers 502 when the upstream resets the connection before answering', async () => {
    assert.equal((await get('/reset', { method: 'POST', body: 'x' })).status, 502);
    assert.equal((await get('/reset')).status, 502);
  });

  it('answers 504 when the route timeout passes, and when the backend timeout passes', async () => {
    assert.equal((await get('/slow?delay=3s')).status, 504);
    assert.equal((await get('/bslow?delay=3s')).status, 504);
  });

  it('sets no timeout when the route timeout is 0, as the Gateway API defines it', async () => {
    const reply = await get('/unbounded?delay=300ms');
    assert.equal(reply.status, 200);
    assert.equal(echo(reply.body).headers['X-Portico-Expected-Rq-Timeout-Ms'], undefined);
  });

  it('applies request and response header modifiers', async () => {
    const reply = await get('/mod', { headers: { 'x-set': 'old', 'x-add': 'one', 'x-remove': 'gone' } });
    const body = echo(reply.body);
    assert.deepEqual(body.headers['X-Set'], ['new']);
    assert.deepEqual(body.headers['X-Add'], ['one,two']);
    assert.equal(body.headers['X-Remove'], undefined);
    assert.equal(reply.headers['x-resp'], 'yes');
    assert.equal(reply.headers['content-type'], undefined);
  });

  it('applies backend filters after the route filters', async () => {
    assert.deepEqual(echo((await get('/bfilter')).body).headers['X-Backend'], ['a']);
  });

  it('rewrites the hostname and the matched prefix, keeping the query', async () => {
    const body = echo((await get('/prefix/old/x?k=v')).body);
    assert.equal(body.path, '/new/x?k=v');
    assert.equal(body.host, 'rewritten.example');
    assert.equal(echo((await get('/prefix/old')).body).path, '/new');
    assert.equal(echo((await get('/full/a/b?z=1')).body).path, '/replaced?z=1');
  });

  it('redirects with the Gateway API scheme, host, port and path rules', async () => {
    const https = await get('/r/https/x?q=1', { host: 'example.com:8080' });
    assert.equal(https.status, 301);
    assert.equal(https.headers.location, 'https://example.com/r/https/x?q=1');
    assert.equal(https.headers['content-length'], '0');
    // No scheme given: the listener port (Gateway port 80, well-known for http) is kept and omitted.
    assert.equal((await get('/r/host')).headers.location, 'http://other.example/r/host');
    assert.equal((await get('/r/port')).headers.location, 'https://example.com:8443/r/port');
    const prefix = await get('/r/prefix/a/b');
    assert.equal(prefix.status, 307);
    assert.equal(prefix.headers.location, 'http://example.com/moved/a/b');
  });

  it('streams a large request body to the upstream intact', async () => {
    const payload = 'x'.repeat(3 * 1024 * 1024);
    const reply = await get('/upload', { method: 'PUT', body: payload });
    assert.deepEqual(JSON.parse(reply.body), {
      bytes: payload.length,
      sha256: createHash('sha256').update(payload).digest('hex'),
    });
  });

  it('cancels the upstream request when the client goes away', async () => {
    const req = request({
      host: '127.0.0.1',
      port,
      path: '/hang',
      headers: { host: 'example.com' },
      agent: false,
    });
    req.on('error', () => {});
    req.end();
    setTimeout(() => req.destroy(), 100);
    await aborted; // the test times out if the proxy never cancels
  });
});

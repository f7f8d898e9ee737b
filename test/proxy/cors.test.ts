// The HTTPRoute CORS filter: origin matching as the Gateway API defines it (unit), and a real proxy answering
// preflights itself and adding CORS headers to actual responses, over HTTP/1.1 and HTTP/2.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { ClientHttp2Session } from 'node:http2';
import { after, before, describe, it } from 'node:test';
import type { CorsPolicy } from '../../src/ir/fleet-config.js';
import { validateFleetConfig } from '../../src/ir/validate.js';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy, type Proxy as PorticoProxy } from '../../src/proxy/index.js';
import {
  corsRequest,
  corsResponseModifier,
  originAllowed,
  parseOrigin,
  preflightHeaders,
} from '../../src/proxy/routing/cors.js';
import { forward, route, simpleFleet, upstream, vhost } from '../support/fleet.js';
import { h2Request, h2Session } from '../support/h2.js';
import { closeServer, httpRequest, listen, startEcho } from '../support/http.js';

function policy(extra: Partial<CorsPolicy> = {}): CorsPolicy {
  return {
    allowOrigins: [],
    allowMethods: [],
    allowHeaders: [],
    exposeHeaders: [],
    maxAgeSeconds: 5,
    allowCredentials: false,
    ...extra,
  };
}

/** Header lines as a map, to compare with what a client would see. */
function asMap(lines: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < lines.length; i += 2) out[lines[i]!] = lines[i + 1]!;
  return out;
}

describe('CORS origin matching', () => {
  it('parses serialized origins, defaulting the port by scheme, and refuses null and lists', () => {
    assert.deepEqual(parseOrigin('https://WWW.Foo.com'), { scheme: 'https', host: 'www.foo.com', port: 443 });
    assert.deepEqual(parseOrigin('http://a.test:8080'), { scheme: 'http', host: 'a.test', port: 8080 });
    assert.deepEqual(parseOrigin('http://[::1]:81'), { scheme: 'http', host: '[::1]', port: 81 });
    for (const bad of [
      'null',
      '',
      'https://a.test/path',
      'https://a.test, https://b.test',
      'a.test',
      'https://a:99999',
    ])
      assert.equal(parseOrigin(bad), undefined, bad);
  });

  it('matches exact origins with the default port either way', () => {
    const p = policy({ allowOrigins: ['https://www.foo.com', 'http://b.test:8080'] });
    assert.equal(originAllowed(p, 'https://www.foo.com'), true);
    assert.equal(originAllowed(p, 'https://www.foo.com:443'), true);
    assert.equal(originAllowed(p, 'HTTPS://WWW.FOO.COM'), true);
    assert.equal(originAllowed(p, 'http://www.foo.com'), false, 'another scheme');
    assert.equal(originAllowed(p, 'https://www.foo.com:8443'), false, 'another port');
    assert.equal(originAllowed(p, 'https://foo.com'), false);
    assert.equal(originAllowed(p, 'https://www.foo.com.evil.test'), false);
    assert.equal(originAllowed(p, 'http://b.test:8080'), true);
    assert.equal(originAllowed(p, 'http://b.test'), false);
  });

  it('lets * in the host cover any number of labels to its left, but never none', () => {
    const p = policy({ allowOrigins: ['https://*.bar.com'] });
    assert.equal(originAllowed(p, 'https://www.bar.com'), true);
    assert.equal(originAllowed(p, 'https://xpto.www.bar.com'), true);
    assert.equal(originAllowed(p, 'https://bar.com'), false);
    assert.equal(originAllowed(p, 'https://evilbar.com'), false);
    assert.equal(originAllowed(p, 'http://www.bar.com'), false);
    const anyHost = policy({ allowOrigins: ['http://*:8080'] });
    assert.equal(originAllowed(anyHost, 'http://x.test:8080'), true);
    assert.equal(originAllowed(anyHost, 'http://x.test'), false);
  });

  it('lets * alone admit every origin but null', () => {
    const p = policy({ allowOrigins: ['*'] });
    assert.equal(originAllowed(p, 'https://foobar.com:12345'), true);
    assert.equal(originAllowed(p, 'chrome-extension://abc'), true);
    assert.equal(originAllowed(p, 'null'), false);
  });

  it('admits nothing with no allowed origins', () => {
    assert.equal(originAllowed(policy(), 'https://a.test'), false);
  });

  it('reads one Origin; two are none', () => {
    assert.equal(corsRequest(['Origin', 'https://a.test']).origin, 'https://a.test');
    assert.equal(corsRequest(['origin', 'https://a.test', 'ORIGIN', 'https://b.test']).origin, undefined);
    assert.equal(
      corsRequest(['access-control-request-headers', 'a', 'Access-Control-Request-Headers', 'b'])
        .requestHeaders,
      'a, b',
    );
  });

  it('answers a preflight: configured lists, echoes for *, never * with credentials', () => {
    const request = corsRequest([
      'origin',
      'https://a.test',
      'access-control-request-method',
      'PUT',
      'access-control-request-headers',
      'x-one,  x-two',
    ]);
    const wild = asMap(
      preflightHeaders(
        policy({
          allowOrigins: ['*'],
          allowMethods: ['*'],
          allowHeaders: ['*'],
          exposeHeaders: ['*'],
          allowCredentials: true,
          maxAgeSeconds: 60,
        }),
        request,
      ),
    );
    assert.equal(wild['access-control-allow-origin'], 'https://a.test');
    assert.equal(wild['access-control-allow-methods'], 'PUT');
    assert.equal(wild['access-control-allow-headers'], 'x-one, x-two');
    assert.equal(wild['access-control-allow-credentials'], 'true');
    assert.equal(wild['access-control-expose-headers'], undefined, '* cannot be sent with credentials');
    assert.equal(wild['access-control-max-age'], '60');
    const listed = asMap(
      preflightHeaders(
        policy({ allowOrigins: ['https://a.test'], allowMethods: ['GET', 'PUT'], exposeHeaders: ['x-3'] }),
        request,
      ),
    );
    assert.equal(listed['access-control-allow-methods'], 'GET, PUT');
    assert.equal(listed['access-control-allow-headers'], undefined);
    assert.equal(listed['access-control-expose-headers'], 'x-3');
    assert.equal(listed['access-control-allow-credentials'], undefined);
    assert.equal(listed['access-control-max-age'], '5');
    const denied = asMap(preflightHeaders(policy({ allowOrigins: ['https://b.test'] }), request));
    assert.deepEqual(Object.keys(denied), ['vary']);
  });

  it('gives actual responses the echoed origin and Vary, and takes a backend CORS header off a denied one', () => {
    const p = policy({ allowOrigins: ['https://a.test'], allowCredentials: true, exposeHeaders: ['x-3'] });
    const allowed = corsResponseModifier(p, corsRequest(['origin', 'https://a.test']));
    assert.deepEqual(allowed.set, [
      { name: 'access-control-allow-origin', value: 'https://a.test' },
      { name: 'access-control-allow-credentials', value: 'true' },
      { name: 'access-control-expose-headers', value: 'x-3' },
    ]);
    assert.deepEqual(allowed.add, [{ name: 'vary', value: 'origin' }]);
    assert.equal(allowed.remove.includes('access-control-allow-origin'), false);
    const denied = corsResponseModifier(p, corsRequest(['origin', 'https://evil.test']));
    assert.deepEqual(denied.set, []);
    assert.equal(denied.remove.includes('access-control-allow-origin'), true);
  });
});

describe('CORS through a running proxy', () => {
  let proxy: PorticoProxy;
  let port: number;
  let session: ClientHttp2Session;
  const servers: Server[] = [];
  /** Requests that reached a backend, by path. */
  const reached: string[] = [];

  before(async () => {
    const echo = await startEcho('cors-pod');
    echo.server.on('request', (req: { url?: string }) => reached.push(req.url ?? ''));
    // A backend with its own permissive CORS: the route's policy decides instead.
    const permissive = createServer((req, res) => {
      reached.push(req.url ?? '');
      res.setHeader('access-control-allow-origin', '*');
      res.setHeader('vary', 'accept-encoding');
      res.end('ok');
    });
    servers.push(echo.server, permissive);
    const upstreams = [
      upstream('default/echo:80', [echo.port]),
      upstream('default/permissive:80', [await listen(permissive)]),
    ];
    const cors = (p: Partial<CorsPolicy>) => [{ type: 'CORS' as const, cors: policy(p) }];
    const config = simpleFleet(
      [
        vhost(80, 'example.com', [
          route(
            forward(['default/echo:80']),
            { path: { type: 'PathPrefix', value: '/cors-1' } },
            cors({
              allowOrigins: ['https://www.foo.com', 'https://*.bar.com'],
              allowMethods: ['GET', 'OPTIONS'],
              allowHeaders: ['x-header-1', 'x-header-2'],
              exposeHeaders: ['x-header-3', 'x-header-4'],
              allowCredentials: true,
              maxAgeSeconds: 3600,
            }),
          ),
          route(
            forward(['default/permissive:80']),
            { path: { type: 'PathPrefix', value: '/own' } },
            cors({ allowOrigins: ['https://www.foo.com'] }),
          ),
          route(forward(['default/echo:80'])),
        ]),
      ],
      upstreams,
    );
    validateFleetConfig(config);
    proxy = createProxy({ bindAddress: '127.0.0.1', portMap: () => 0, log: discardingLogger });
    assert.deepEqual(await proxy.apply(config), { ok: true, listenerErrors: [] });
    port = proxy.addresses().find((a) => a.listener === 'port-80')!.port;
    session = await h2Session(`http://127.0.0.1:${port}`);
  });

  after(async () => {
    session.close();
    await proxy.close();
    await Promise.all(servers.map(closeServer));
  });

  const preflight = {
    origin: 'https://xpto.www.bar.com',
    'access-control-request-method': 'GET',
    'access-control-request-headers': 'x-header-1, x-header-2',
  };

  it('answers a preflight itself over HTTP/1.1, the backend never asked', async () => {
    const before = reached.length;
    const reply = await httpRequest(port, '/cors-1/x', { method: 'OPTIONS', headers: preflight });
    assert.equal(reply.status, 200);
    assert.equal(reply.body, '');
    assert.equal(reply.headers['access-control-allow-origin'], 'https://xpto.www.bar.com');
    assert.equal(reply.headers['access-control-allow-methods'], 'GET, OPTIONS');
    assert.equal(reply.headers['access-control-allow-headers'], 'x-header-1, x-header-2');
    assert.equal(reply.headers['access-control-expose-headers'], 'x-header-3, x-header-4');
    assert.equal(reply.headers['access-control-max-age'], '3600');
    assert.equal(reply.headers['access-control-allow-credentials'], 'true');
    assert.match(String(reply.headers.vary), /origin/);
    assert.equal(reached.length, before);
  });

  it('answers a preflight itself over HTTP/2', async () => {
    const before = reached.length;
    const reply = await h2Request(session, '/cors-1', { method: 'OPTIONS', headers: preflight });
    assert.equal(reply.status, 200);
    assert.equal(reply.headers['access-control-allow-origin'], 'https://xpto.www.bar.com');
    assert.equal(reply.headers['access-control-max-age'], '3600');
    assert.equal(reached.length, before);
  });

  it('gives a disallowed origin no CORS headers, preflight or not', async () => {
    const denied = { ...preflight, origin: 'https://foobar.com' };
    const pre = await httpRequest(port, '/cors-1', { method: 'OPTIONS', headers: denied });
    assert.equal(pre.status, 200);
    assert.equal(pre.headers['access-control-allow-origin'], undefined);
    assert.equal(pre.headers['access-control-allow-methods'], undefined);
    const get = await httpRequest(port, '/cors-1', { headers: { origin: 'https://foobar.com' } });
    assert.equal(get.status, 200);
    assert.equal(get.headers['access-control-allow-origin'], undefined);
    assert.equal(get.headers.vary, 'origin');
    const h2 = await h2Request(session, '/cors-1', { headers: { origin: 'https://bar.com' } });
    assert.equal(h2.status, 200);
    assert.equal(h2.headers['access-control-allow-origin'], undefined);
  });

  it('adds the CORS headers to an actual response, over HTTP/1.1 and HTTP/2', async () => {
    const get = await httpRequest(port, '/cors-1', { headers: { origin: 'https://www.foo.com' } });
    assert.equal(get.status, 200);
    assert.equal(JSON.parse(get.body).path, '/cors-1', 'the backend answered');
    assert.equal(get.headers['access-control-allow-origin'], 'https://www.foo.com');
    assert.equal(get.headers['access-control-allow-credentials'], 'true');
    assert.equal(get.headers['access-control-expose-headers'], 'x-header-3, x-header-4');
    assert.equal(get.headers.vary, 'origin');
    const h2 = await h2Request(session, '/cors-1', { headers: { origin: 'https://www.foo.com' } });
    assert.equal(h2.status, 200);
    assert.equal(h2.headers['access-control-allow-origin'], 'https://www.foo.com');
    assert.equal(h2.headers.vary, 'origin');
  });

  it('forwards an OPTIONS that is no preflight, and leaves routes without the filter alone', async () => {
    const before = reached.length;
    const options = await httpRequest(port, '/cors-1', {
      method: 'OPTIONS',
      headers: { origin: 'https://www.foo.com' },
    });
    assert.equal(options.status, 200);
    assert.equal(JSON.parse(options.body).method, 'OPTIONS');
    assert.equal(reached.length, before + 1);
    const plain = await httpRequest(port, '/other', { method: 'OPTIONS', headers: preflight });
    assert.equal(JSON.parse(plain.body).method, 'OPTIONS', 'no CORS filter: the backend answers');
    assert.equal(plain.headers['access-control-allow-origin'], undefined);
  });

  it("replaces a backend's own CORS headers with the route's decision", async () => {
    const denied = await httpRequest(port, '/own', { headers: { origin: 'https://evil.test' } });
    assert.equal(denied.body, 'ok');
    assert.equal(denied.headers['access-control-allow-origin'], undefined);
    assert.equal(denied.headers.vary, 'accept-encoding,origin');
    const allowed = await httpRequest(port, '/own', { headers: { origin: 'https://www.foo.com' } });
    assert.equal(allowed.headers['access-control-allow-origin'], 'https://www.foo.com');
  });
});

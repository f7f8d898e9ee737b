// A request path is normalised before it is matched, rewritten, redirected or forwarded (RFC 3986 §6.2.2: escapes
// of unreserved characters decoded, other escapes' hex upper-cased, dot segments removed; repeated slashes
// merged), and the backend gets the path that was matched; a path whose meaning servers disagree on (an escaped
// slash or backslash, `;` parameters, a NUL) is refused with 400. So neither a route that guards a prefix nor one
// that strips it can be bypassed by spelling the path another way. Real requests, HTTP/1.1 and HTTP/2.
import assert from 'node:assert/strict';
import type { ClientHttp2Session } from 'node:http2';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { normalizePath } from '../../src/proxy/routing/path-normalization.js';
import { forward, route, simpleFleet, upstream, vhost } from '../support/fleet.js';
import { h2Request } from '../support/h2.js';
import { closeServer, type EchoBody, startEcho } from '../support/http.js';
import { type ServingProxy, servingProxy } from '../support/serving-proxy.js';

const WITHIN = { timeout: 15_000 };

interface RawReply {
  status: number;
  body: string;
}

/** One HTTP/1.1 request with the target written byte for byte (no client library normalises it). */
function rawRequest(port: number, host: string, target: string): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    let text = '';
    socket.setEncoding('latin1');
    socket.on('connect', () =>
      socket.write(`GET ${target} HTTP/1.1\r\nhost: ${host}\r\nconnection: close\r\n\r\n`),
    );
    socket.on('data', (chunk: string) => {
      text += chunk;
    });
    socket.on('end', () => {
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
      resolve({ status, body: text.slice(text.indexOf('\r\n\r\n') + 4) });
    });
    socket.on('error', reject);
  });
}

/** The path the echo backend received, or the status when the proxy answered itself. */
function outcome(reply: RawReply | { status: number; body: string }): string | number {
  if (reply.status !== 200) return reply.status;
  const echo = JSON.parse(reply.body) as EchoBody;
  return `${echo.pod} ${echo.path}`;
}

describe('path normalisation before matching, rewriting and forwarding', () => {
  let served: ServingProxy;
  let port: number;
  let echo: Awaited<ReturnType<typeof startEcho>>;
  let session: ClientHttp2Session;

  before(async () => {
    echo = await startEcho('app');
    const prefix = (value: string) => ({ path: { type: 'PathPrefix' as const, value } });
    const config = simpleFleet(
      [
        // /admin is guarded (answered 403 here); everything else goes to the app.
        vhost(80, 'guarded.example.com', [
          route({ type: 'DirectResponse', status: 403 }, prefix('/admin')),
          route(forward(['default/app:80'])),
        ]),
        // Only /public is routed: /admin has no route (404).
        vhost(80, 'public.example.com', [route(forward(['default/app:80']), prefix('/public'))]),
        // /api is stripped before forwarding: /api/x reaches the app as /x.
        vhost(80, 'rewrite.example.com', [
          route(forward(['default/app:80']), prefix('/api'), [
            { type: 'URLRewrite', path: { type: 'ReplacePrefixMatch', value: '/' } },
          ]),
        ]),
        // A redirect keeps the (normalised) path.
        vhost(80, 'redirect.example.com', [
          route({ type: 'Redirect', hostname: 'elsewhere.example.com', statusCode: 302 }, prefix('/go')),
        ]),
        // Configured values are compared in their normalised form too.
        vhost(80, 'exact.example.com', [
          route(forward(['default/app:80']), { path: { type: 'Exact', value: '/caf%c3%a9/%7euser' } }),
        ]),
      ],
      [upstream('default/app:80', [echo.port])],
    );
    served = await servingProxy(config);
    ({ port, session } = served);
  });

  after(async () => {
    await served.close();
    await closeServer(echo.server);
  });

  /** The outcome over HTTP/1.1 and over HTTP/2, which must agree. */
  async function both(host: string, target: string): Promise<string | number> {
    const one = outcome(await rawRequest(port, host, target));
    const two = outcome(await h2Request(session, target, { authority: host }));
    assert.equal(two, one, `HTTP/2 and HTTP/1.1 disagree on ${host}${target}`);
    return one;
  }

  it('a guarded prefix cannot be reached by spelling it another way', WITHIN, async () => {
    const cases: [string, string | number][] = [
      ['/admin', 403],
      ['/admin/users', 403],
      ['/%61dmin', 403],
      ['/%61%64%6D%69%6E/users', 403],
      ['//admin', 403],
      ['///admin//users', 403],
      ['/./admin', 403],
      ['/x/../admin', 403],
      ['/public/%2e%2e/admin', 403],
      ['/public/%2E%2E/admin', 403],
      ['/public/.%2e/admin', 403],
      ['/public/../../../admin', 403],
      ['/public/..%2Fadmin', 400],
      ['/public/..%2fadmin', 400],
      ['/public%2F..%2Fadmin', 400],
      ['/public/..%5Cadmin', 400],
      ['/public/..\\admin', 400],
      ['/admin;jsessionid=1', 400],
      ['/public/..;/admin', 400],
      ['/admin%3Bx', 400],
      ['/admin%00.html', 400],
      ['/public/%zz', 400],
      ['/public/%4', 400],
      ['/adminx', 'app /adminx'],
      ['/public/x', 'app /public/x'],
    ];
    for (const [target, expected] of cases)
      assert.equal(await both('guarded.example.com', target), expected, target);
  });

  it('an unrouted prefix stays unrouted however the path climbs out of a routed one', WITHIN, async () => {
    const cases: [string, string | number][] = [
      ['/public/../admin', 404],
      ['/public/%2e%2e/admin', 404],
      ['/public/./../admin', 404],
      ['/public/..', 404],
      ['/public/x/../../admin', 404],
      ['/public/x/../y', 'app /public/y'],
      ['/public//x', 'app /public/x'],
      ['/public/./x/.', 'app /public/x/'],
      ['/public/%7Euser/%41', 'app /public/~user/A'],
      ['/public/caf%c3%a9?q=%2F..&r=/../x', 'app /public/caf%C3%A9?q=%2F..&r=/../x'],
    ];
    for (const [target, expected] of cases)
      assert.equal(await both('public.example.com', target), expected, target);
  });

  it(
    'a stripped prefix is matched on the normalised path, so the rest cannot climb out',
    WITHIN,
    async () => {
      const cases: [string, string | number][] = [
        ['/api/x', 'app /x'],
        ['/api//x', 'app /x'],
        ['/%61pi/x', 'app /x'],
        ['/api/../admin', 404],
        ['/api/%2e%2e/admin', 404],
        ['/api/x/../../admin', 404],
        ['/api/x/..', 'app /'],
        ['/api/..%2Fadmin', 400],
      ];
      for (const [target, expected] of cases)
        assert.equal(await both('rewrite.example.com', target), expected, target);
    },
  );

  it(
    'a redirect carries the normalised path, and configured paths are compared normalised',
    WITHIN,
    async () => {
      const redirect = await rawRequest(port, 'redirect.example.com', '/go/x/../%79');
      assert.equal(redirect.status, 302);
      const location = await new Promise<string>((resolve, reject) => {
        const socket = connect({ host: '127.0.0.1', port });
        let text = '';
        socket.setEncoding('latin1');
        socket.on('connect', () =>
          socket.write(
            'GET /go/x/../%79 HTTP/1.1\r\nhost: redirect.example.com\r\nconnection: close\r\n\r\n',
          ),
        );
        socket.on('data', (c: string) => {
          text += c;
        });
        socket.on('end', () => resolve(/\r\nlocation: ([^\r]*)\r\n/i.exec(text)?.[1] ?? ''));
        socket.on('error', reject);
      });
      assert.equal(location, 'http://elsewhere.example.com/go/y');
      assert.equal(await both('exact.example.com', '/caf%C3%A9/~user'), 'app /caf%C3%A9/~user');
      assert.equal(await both('exact.example.com', '/caf%c3%a9/%7Euser'), 'app /caf%C3%A9/~user');
    },
  );
});

describe('normalizePath', () => {
  it('leaves a normal path as the very same string', () => {
    const path = '/a/b-c/d_e.f~g/';
    assert.equal(normalizePath(path), path);
  });

  it('follows RFC 3986 §5.2.4 for dot segments, and merges slashes', () => {
    const cases: [string, string][] = [
      ['/', '/'],
      ['/..', '/'],
      ['/.', '/'],
      ['/a/b/..', '/a/'],
      ['/a/b/.', '/a/b/'],
      ['/a/./b/../c', '/a/c'],
      ['//a///b//', '/a/b/'],
      ['/a/%2E/b', '/a/b'],
      ['/a..b/.c/c.', '/a..b/.c/c.'],
    ];
    for (const [input, expected] of cases) assert.equal(normalizePath(input), expected, input);
  });

  it('refuses what servers read in different ways', () => {
    for (const path of ['/a%2fb', '/a%5Cb', '/a\\b', '/a;b', '/a%3bb', '/a%00', '/a#b', '/a%', '/a%g0'])
      assert.equal(normalizePath(path), undefined, path);
  });
});

// Header and trailer fields named like Object.prototype's members (`__proto__`, `constructor`,
// `hasOwnProperty`) are ordinary fields: relayed with their own values both ways, over HTTP/1.1 and HTTP/2, to
// HTTP/1.1 and h2c backends, with and without filters, and never matched by a header match they do not carry.
// A map keyed by header names on a plain object would read the prototype's member instead, or swap the
// object's prototype on assignment.
import assert from 'node:assert/strict';
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import {
  type ClientHttp2Session,
  createServer as createH2Server,
  type Http2Server,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
} from 'node:http2';
import {
  type AddressInfo,
  createServer as createNetServer,
  type Server as NetServer,
  Socket,
} from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { Cluster } from '../../src/ir/fleet-config.js';
import { ClientRequest, clientFacts } from '../../src/proxy/exchange.js';
import { forward, route, simpleFleet, type Upstream, upstream, vhost } from '../support/fleet.js';
import { closeServer, type EchoBody, startEcho } from '../support/http.js';
import { type ServingProxy, servingProxy } from '../support/serving-proxy.js';

const NAMES = ['__proto__', 'constructor', 'hasOwnProperty'] as const;
/** A request that never gets an answer fails its test, not the whole file. */
const WITHIN = { timeout: 10_000 };

/** A header object whose keys are only the fields given: no prototype to read from or to replace. */
function fields(pairs: [string, string | string[]][]): OutgoingHttpHeaders {
  const out = Object.create(null) as OutgoingHttpHeaders;
  for (const [name, value] of pairs) out[name] = value;
  return out;
}

/** Name → values of flat lines (name, value, ...), names lower case, in a Map (no prototype involved). */
function byName(lines: readonly string[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (let i = 0; i < lines.length; i += 2) {
    const name = lines[i]!.toLowerCase();
    out.set(name, [...(out.get(name) ?? []), lines[i + 1]!]);
  }
  return out;
}

/** What a backend sent back about its request: its header and trailer lines. */
interface Mirrored {
  headers: string[];
  trailers: string[];
}

interface Http1Reply {
  status: number;
  rawHeaders: string[];
  rawTrailers: string[];
  body: string;
}

/** An HTTP/1.1 request with header lines as given (order and names kept), a chunked body with trailers. */
function http1(
  port: number,
  path: string,
  lines: string[],
  trailers?: [string, string][],
): Promise<Http1Reply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        method: trailers === undefined ? 'GET' : 'POST',
        headers: ['host', 'example.com', 'te', 'trailers', ...lines],
        agent: false,
      },
      (res: IncomingMessage) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            rawHeaders: res.rawHeaders,
            rawTrailers: res.rawTrailers,
            body,
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (trailers !== undefined) {
      req.write('body');
      req.addTrailers(trailers);
    }
    req.end();
  });
}

interface Http2Reply {
  status: number;
  headers: IncomingHttpHeaders;
  trailers: IncomingHttpHeaders | undefined;
  body: string;
}

function http2(
  session: ClientHttp2Session,
  path: string,
  headers: [string, string | string[]][],
  trailers?: [string, string][],
): Promise<Http2Reply> {
  return new Promise((resolve, reject) => {
    const stream = session.request(
      fields([
        [':path', path],
        [':method', trailers === undefined ? 'GET' : 'POST'],
        [':authority', 'example.com'],
        ['te', 'trailers'],
        ...headers,
      ]),
      { endStream: false, waitForTrailers: trailers !== undefined },
    );
    if (trailers !== undefined) stream.once('wantTrailers', () => stream.sendTrailers(fields(trailers)));
    let status = 0;
    let replyHeaders: IncomingHttpHeaders = {};
    let replyTrailers: IncomingHttpHeaders | undefined;
    let body = '';
    stream.on('response', (h) => {
      status = Number(h[':status']);
      replyHeaders = h;
    });
    stream.on('trailers', (t) => {
      replyTrailers = t;
    });
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      body += chunk;
    });
    stream.on('error', reject);
    stream.on('end', () => resolve({ status, headers: replyHeaders, trailers: replyTrailers, body }));
    stream.end(trailers === undefined ? undefined : 'body');
  });
}

/** The raw response a backend gives for `/respond`: the three names as header and trailer fields. */
const RAW_RESPONSE =
  'HTTP/1.1 200 OK\r\n__proto__: a1\r\n__proto__: a2\r\nconstructor: c1\r\nhasOwnProperty: h1\r\n' +
  'transfer-encoding: chunked\r\n\r\n' +
  '2\r\nok\r\n0\r\n__proto__: t1\r\nconstructor: t2\r\nhasOwnProperty: t3\r\n\r\n';

/** An HTTP/1.1 backend written by hand: every request head it reads gets RAW_RESPONSE. */
function rawResponder(): NetServer {
  return createNetServer((socket) => {
    let seen = '';
    socket.on('data', (chunk: Buffer) => {
      seen += chunk.toString('latin1');
      for (let end = seen.indexOf('\r\n\r\n'); end >= 0; end = seen.indexOf('\r\n\r\n')) {
        seen = seen.slice(end + 4);
        socket.write(RAW_RESPONSE);
      }
    });
    socket.on('error', () => socket.destroy());
  });
}

/** An HTTP/1.1 backend that answers with the header and trailer lines it received, as JSON. */
function http1Mirror(): Server {
  return createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const mirrored: Mirrored = { headers: req.rawHeaders, trailers: req.rawTrailers };
      res.end(JSON.stringify(mirrored));
    });
  });
}

/**
 * An h2c backend: `/respond` answers with the three names as header and trailer fields, anything else with
 * the header and trailer fields it received (as JSON).
 */
function h2cBackend(): Http2Server {
  const server = createH2Server();
  server.on('stream', (stream, headers) => {
    if (headers[':path'] === '/respond') {
      stream.respond(
        fields([
          [':status', '200'],
          ['__proto__', ['a1', 'a2']],
          ['constructor', 'c1'],
          ['hasownproperty', 'h1'],
        ]),
        { waitForTrailers: true },
      );
      stream.once('wantTrailers', () =>
        stream.sendTrailers(
          fields([
            ['__proto__', 't1'],
            ['constructor', 't2'],
            ['hasownproperty', 't3'],
          ]),
        ),
      );
      stream.end('ok');
      return;
    }
    const received: string[] = [];
    for (const name of Object.keys(headers)) {
      const value = headers[name];
      if (name.startsWith(':') || value === undefined) continue;
      for (const v of Array.isArray(value) ? value : [value]) received.push(name, String(v));
    }
    stream.resume();
    let trailers: string[] = [];
    stream.on('trailers', (t: IncomingHttpHeaders) => {
      trailers = Object.keys(t).flatMap((name) => {
        const value = t[name];
        return value === undefined ? [] : [name, String(value)];
      });
    });
    stream.on('end', () => {
      const mirrored: Mirrored = { headers: received, trailers };
      stream.respond(fields([[':status', '200']]));
      stream.end(JSON.stringify(mirrored));
    });
  });
  return server;
}

async function listenOn(server: NetServer | Http2Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
  return (server.address() as AddressInfo).port;
}

function h2c(name: string, port: number): Upstream {
  const u = upstream(name, [port]);
  const cluster: Cluster = { ...u.cluster, protocol: 'h2c' };
  return { cluster, endpoints: u.endpoints };
}

/** The request lines every test sends: each name once, `__proto__` twice (a repeated field is a list). */
const REQUEST_LINES = ['__proto__', 'p1', '__proto__', 'p2', 'constructor', 'c1', 'hasOwnProperty', 'h1'];

function assertRequestFields(received: Map<string, string[]>, where: string): void {
  assert.deepEqual(received.get('__proto__'), ['p1', 'p2'], `${where}: __proto__`);
  assert.deepEqual(received.get('constructor'), ['c1'], `${where}: constructor`);
  assert.deepEqual(received.get('hasownproperty'), ['h1'], `${where}: hasOwnProperty`);
}

function assertResponseFields(received: Map<string, string[]>, where: string): void {
  // HTTP/2 clients see a repeated field joined by Node: one value `a1, a2`.
  const proto = received.get('__proto__')?.join(', ');
  assert.equal(proto, 'a1, a2', `${where}: __proto__`);
  assert.deepEqual(received.get('constructor'), ['c1'], `${where}: constructor`);
  assert.deepEqual(received.get('hasownproperty'), ['h1'], `${where}: hasOwnProperty`);
}

function assertTrailers(received: Map<string, string[]>, where: string): void {
  assert.deepEqual(received.get('__proto__'), ['t1'], `${where}: __proto__ trailer`);
  assert.deepEqual(received.get('constructor'), ['t2'], `${where}: constructor trailer`);
  assert.deepEqual(received.get('hasownproperty'), ['t3'], `${where}: hasOwnProperty trailer`);
}

/** Lines of an HTTP/2 header object (pseudo-headers left out), names as Node gives them (lower case). */
function h2Lines(headers: IncomingHttpHeaders | undefined): string[] {
  if (headers === undefined) return [];
  return Object.keys(headers).flatMap((name) => {
    const value = headers[name];
    if (name.startsWith(':') || value === undefined) return [];
    return (Array.isArray(value) ? value : [value]).flatMap((v) => [name, String(v)]);
  });
}

/** The echo backend's header lists, by lower-case name. */
function echoed(body: string): Map<string, string[]> {
  const echo = JSON.parse(body) as EchoBody;
  return new Map(Object.entries(echo.headers).map(([name, values]) => [name.toLowerCase(), values]));
}

describe('header and trailer fields named like Object.prototype members', () => {
  let served: ServingProxy;
  let port: number;
  let echo: Awaited<ReturnType<typeof startEcho>>;
  const mirror = http1Mirror();
  const raw = rawResponder();
  const h2Backend = h2cBackend();
  let session: ClientHttp2Session;
  const addFilter = {
    type: 'RequestHeaderModifier' as const,
    headers: { set: [], add: [{ name: 'x-filtered', value: '1' }], remove: [] },
  };
  const responseFilter = {
    type: 'ResponseHeaderModifier' as const,
    headers: { set: [{ name: 'x-response-filtered', value: '1' }], add: [], remove: [] },
  };

  before(async () => {
    echo = await startEcho('echo-pod');
    const upstreams = [
      upstream('default/echo:80', [echo.port]),
      h2c('default/echo-h2c:80', echo.port),
      upstream('default/mirror:80', [await listenOn(mirror)]),
      upstream('default/raw:80', [await listenOn(raw)]),
      h2c('default/h2c:80', await listenOn(h2Backend)),
    ];
    const prefix = (value: string) => ({ path: { type: 'PathPrefix' as const, value } });
    const config = simpleFleet(
      [
        vhost(80, 'example.com', [
          // A header match on such a name matches only a request that carries the field.
          route(forward(['default/echo:80']), {
            ...prefix('/guarded'),
            headers: [{ type: 'RegularExpression', name: '__proto__', value: '.*' }],
          }),
          route(forward(['default/echo:80']), {
            ...prefix('/guarded'),
            headers: [{ type: 'RegularExpression', name: 'constructor', value: '.*native code.*' }],
          }),
          route(forward(['default/echo:80']), {
            ...prefix('/exact'),
            headers: [{ type: 'Exact', name: 'constructor', value: 'c1' }],
          }),
          route(forward(['default/echo:80']), prefix('/plain')),
          route(forward(['default/echo:80']), prefix('/filtered'), [addFilter]),
          route(forward(['default/echo-h2c:80']), prefix('/h2c-echo')),
          route(forward(['default/mirror:80']), prefix('/mirror')),
          route(forward(['default/h2c:80']), prefix('/h2c-mirror')),
          route(forward(['default/raw:80']), { path: { type: 'Exact', value: '/respond' } }),
          route(forward(['default/raw:80']), { path: { type: 'Exact', value: '/respond-filtered' } }, [
            responseFilter,
          ]),
          route(forward(['default/h2c:80']), { path: { type: 'Exact', value: '/h2c/respond' } }, [
            { type: 'URLRewrite', path: { type: 'ReplaceFullPath', value: '/respond' } },
          ]),
        ]),
      ],
      upstreams,
    );
    served = await servingProxy(config);
    ({ port, session } = served);
  });

  after(async () => {
    await served.close();
    await closeServer(echo.server);
    await closeServer(mirror);
    raw.close();
    h2Backend.close();
  });

  it('the echo backend lists such request fields as it lists any other', WITHIN, async () => {
    const reply = await http1(echo.port, '/', REQUEST_LINES);
    assert.equal(reply.status, 200);
    assertRequestFields(echoed(reply.body), 'echo');
  });

  it(
    'HTTP/1.1 request fields reach HTTP/1.1 and h2c backends, with and without filters',
    WITHIN,
    async () => {
      for (const path of ['/plain', '/filtered', '/h2c-echo']) {
        const reply = await http1(port, path, REQUEST_LINES);
        assert.equal(reply.status, 200, path);
        assertRequestFields(echoed(reply.body), `HTTP/1.1 ${path}`);
      }
    },
  );

  it('HTTP/2 request fields reach HTTP/1.1 and h2c backends, with and without filters', WITHIN, async () => {
    const headers: [string, string | string[]][] = [
      ['__proto__', ['p1', 'p2']],
      ['constructor', 'c1'],
      ['hasownproperty', 'h1'],
    ];
    for (const path of ['/plain', '/filtered', '/h2c-echo']) {
      const reply = await http2(session, path, headers);
      assert.equal(reply.status, 200, path);
      // Node's HTTP/2 server joins a repeated field: `p1, p2` may arrive as one value.
      const got = echoed(reply.body);
      const proto = got.get('__proto__')?.join(', ');
      assert.equal(proto, 'p1, p2', `HTTP/2 ${path}: __proto__`);
      assert.deepEqual(got.get('constructor'), ['c1'], `HTTP/2 ${path}: constructor`);
      assert.deepEqual(got.get('hasownproperty'), ['h1'], `HTTP/2 ${path}: hasOwnProperty`);
    }
  });

  it(
    'request trailers reach HTTP/1.1 and h2c backends from HTTP/1.1 and HTTP/2 clients',
    WITHIN,
    async () => {
      const trailers: [string, string][] = [
        ['__proto__', 't1'],
        ['constructor', 't2'],
        ['hasownproperty', 't3'],
      ];
      for (const path of ['/mirror', '/h2c-mirror']) {
        const one = await http1(port, path, [], trailers);
        assert.equal(one.status, 200, path);
        assertTrailers(byName((JSON.parse(one.body) as Mirrored).trailers), `HTTP/1.1 ${path}`);
        const two = await http2(session, path, [], trailers);
        assert.equal(two.status, 200, path);
        assertTrailers(byName((JSON.parse(two.body) as Mirrored).trailers), `HTTP/2 ${path}`);
      }
    },
  );

  it(
    'response fields and trailers from HTTP/1.1 and h2c backends reach HTTP/1.1 and HTTP/2 clients',
    WITHIN,
    async () => {
      for (const path of ['/respond', '/respond-filtered', '/h2c/respond']) {
        const one = await http1(port, path, []);
        assert.equal(one.status, 200, path);
        assert.equal(one.body, 'ok', path);
        const headers = byName(one.rawHeaders);
        headers.set('__proto__', [headers.get('__proto__')?.join(', ') ?? '']);
        assertResponseFields(headers, `HTTP/1.1 ${path}`);
        assertTrailers(byName(one.rawTrailers), `HTTP/1.1 ${path}`);
        const two = await http2(session, path, []);
        assert.equal(two.status, 200, path);
        assert.equal(two.body, 'ok', path);
        assertResponseFields(byName(h2Lines(two.headers)), `HTTP/2 ${path}`);
        assertTrailers(byName(h2Lines(two.trailers)), `HTTP/2 ${path}`);
      }
    },
  );

  it('a header match on such a name matches only requests that carry the field', WITHIN, async () => {
    assert.equal((await http1(port, '/guarded', [])).status, 404);
    assert.equal((await http1(port, '/guarded', ['__proto__', 'x'])).status, 200);
    assert.equal((await http1(port, '/guarded', ['constructor', 'native code'])).status, 200);
    assert.equal((await http1(port, '/exact', [])).status, 404);
    assert.equal((await http1(port, '/exact', ['constructor', 'c1'])).status, 200);
    const h2 = (path: string, headers: [string, string][]) => http2(session, path, headers);
    assert.equal((await h2('/guarded', [])).status, 404);
    assert.equal((await h2('/guarded', [['__proto__', 'x']])).status, 200);
  });

  it('the header map of a request keys such fields as its own, with their values', WITHIN, () => {
    const lines = ['__proto__', 'p1', 'Constructor', 'c1', 'hasOwnProperty', 'h1', '__proto__', 'p2'];
    const headers = new ClientRequest('GET', '/', lines, clientFacts(new Socket()), null, false).headers;
    assert.deepEqual(Object.keys(headers).sort(), ['__proto__', 'constructor', 'hasownproperty']);
    // Read as own properties: an inherited member would not count.
    const own = (name: string) => Object.getOwnPropertyDescriptor(headers, name)?.value as unknown;
    assert.equal(own('__proto__'), 'p1, p2');
    assert.equal(own('constructor'), 'c1');
    assert.equal(own('hasownproperty'), 'h1');
    assert.equal(Object.getPrototypeOf(headers), null);
  });

  it('no object prototype was reached', WITHIN, () => {
    const plain: Record<string, unknown> = {};
    for (const name of NAMES) assert.equal(typeof plain[name], name === '__proto__' ? 'object' : 'function');
    assert.equal(Object.getPrototypeOf(plain), Object.prototype);
    assert.equal(Object.keys(Object.prototype).length, 0);
  });
});

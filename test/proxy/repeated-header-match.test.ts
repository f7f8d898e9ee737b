// A header field repeated in a request, as an HTTPRoute header match sees it: each line's value on its own,
// never the lines joined (issue 42's advisory class: a rule on one value must not be dodged, nor a route reached,
// through a string no client sent), the same over HTTP/1.1 and HTTP/2. A line `one, two` is one value. Cookie
// lines are the exception: joined with `; `, as HTTP/2 joins the crumbs a client may split one cookie into.
import assert from 'node:assert/strict';
import type { ClientHttp2Session } from 'node:http2';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { HeaderMatch } from '../../src/ir/fleet-config.js';
import { forward, route, simpleFleet, upstream, vhost } from '../support/fleet.js';
import { h2Request } from '../support/h2.js';
import { closeServer, type EchoBody, startEcho } from '../support/http.js';
import { type ServingProxy, servingProxy } from '../support/serving-proxy.js';

const WITHIN = { timeout: 15_000 };

/** One HTTP/1.1 request with the header lines given, in order; the pod of the backend that answered, or the status. */
function http1(port: number, path: string, lines: [string, string][]): Promise<string | number> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    let text = '';
    socket.setEncoding('latin1');
    socket.on('connect', () => {
      const head = lines.map(([name, value]) => `${name}: ${value}\r\n`).join('');
      socket.write(`GET ${path} HTTP/1.1\r\nhost: example.com\r\n${head}connection: close\r\n\r\n`);
    });
    socket.on('data', (chunk: string) => {
      text += chunk;
    });
    socket.on('end', () => {
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
      resolve(
        status === 200 ? (JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as EchoBody).pod : status,
      );
    });
    socket.on('error', reject);
  });
}

describe('a repeated request header as header matches see it', () => {
  let served: ServingProxy;
  let port: number;
  let echo: Awaited<ReturnType<typeof startEcho>>;
  let session: ClientHttp2Session;

  /** Path `/<name>` is routed to the echo backend only when `match` holds. */
  const guarded: [string, HeaderMatch][] = [
    ['exact-one', { type: 'Exact', name: 'x-a', value: 'one' }],
    ['exact-two', { type: 'Exact', name: 'x-a', value: 'two' }],
    ['exact-combined', { type: 'Exact', name: 'x-a', value: 'one, two' }],
    ['regex-combined', { type: 'RegularExpression', name: 'x-a', value: 'one, t.o' }],
    ['regex-single', { type: 'RegularExpression', name: 'x-a', value: '[a-z]+' }],
    ['cookie', { type: 'Exact', name: 'cookie', value: 'a=1; b=2' }],
    ['set-cookie', { type: 'Exact', name: 'set-cookie', value: 's=2' }],
  ];

  before(async () => {
    echo = await startEcho('matched');
    const routes = guarded.map(([name, match]) =>
      route(forward(['default/echo:80']), { path: { type: 'Exact', value: `/${name}` }, headers: [match] }),
    );
    const config = simpleFleet(
      [vhost(80, 'example.com', routes)],
      [upstream('default/echo:80', [echo.port])],
    );
    served = await servingProxy(config);
    ({ port, session } = served);
  });

  after(async () => {
    await served.close();
    await closeServer(echo.server);
  });

  /** Which guarded paths a request with these header lines reaches, over HTTP/1.1 and (when given) HTTP/2. */
  async function reached(
    lines: [string, string][],
    h2: Record<string, string | string[]>,
  ): Promise<string[]> {
    const out: string[] = [];
    for (const [name] of guarded) {
      const one = await http1(port, `/${name}`, lines);
      const reply = await h2Request(session, `/${name}`, { headers: h2 });
      const two = reply.status === 200 ? (JSON.parse(reply.body) as EchoBody).pod : reply.status;
      assert.equal(two, one, `/${name}: HTTP/2 and HTTP/1.1 disagree`);
      if (one === 'matched') out.push(name);
      else assert.equal(one, 404, name);
    }
    return out;
  }

  it('two lines match each on its own, never as their joined value', WITHIN, async () => {
    const twoLines = await reached(
      [
        ['x-a', 'one'],
        ['X-A', 'two'],
      ],
      { 'x-a': ['one', 'two'] },
    );
    assert.deepEqual(twoLines, ['exact-one', 'exact-two', 'regex-single']);
  });

  it('one line with a comma is one value', WITHIN, async () => {
    assert.deepEqual(await reached([['x-a', 'one, two']], { 'x-a': 'one, two' }), [
      'exact-combined',
      'regex-combined',
    ]);
  });

  it('a single value matches as itself', WITHIN, async () => {
    assert.deepEqual(await reached([['x-a', 'two']], { 'x-a': 'two' }), ['exact-two', 'regex-single']);
  });

  it('cookie lines are joined with `; `, over HTTP/1.1 as HTTP/2 joins its crumbs', WITHIN, async () => {
    assert.deepEqual(
      await reached(
        [
          ['cookie', 'a=1'],
          ['cookie', 'b=2'],
        ],
        { cookie: ['a=1', 'b=2'] },
      ),
      ['cookie'],
    );
  });

  it('set-cookie values are matched one by one: they cannot be combined', WITHIN, async () => {
    assert.deepEqual(
      await reached(
        [
          ['set-cookie', 's=1'],
          ['set-cookie', 's=2'],
        ],
        { 'set-cookie': ['s=1', 's=2'] },
      ),
      ['set-cookie'],
    );
  });
});

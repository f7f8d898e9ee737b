// The PROXY protocol, v1 and v2, from a sender written here to HAProxy's specification (proxy-protocol.txt):
// strict parsing of both versions; through a real proxy, the header's source is the client the backend's
// x-forwarded-for names, over HTTP and over HTTPS (the header comes before the TLS handshake); a peer outside the
// trusted CIDRs, a bad header and a header that never comes are refused; a listener without the protocol
// answers a PROXY line as the bad HTTP it is.
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { connect as tlsConnect } from 'node:tls';
import type { Listener } from '../../src/ir/fleet-config.js';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy, type Proxy as PorticoProxy } from '../../src/proxy/index.js';
import { parseProxyHeader } from '../../src/proxy/wire/proxy-protocol.js';
import { selfSigned } from '../support/certs.js';
import { fleet, forward, listener, route, upstream, vhost } from '../support/fleet.js';
import { closeServer, startEcho } from '../support/http.js';

const V2_SIGNATURE = [0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a];

/** A v2 header: PROXY (or LOCAL), TCP over IPv4 or IPv6, the source and destination given. */
function v2(source: string, sourcePort: number, command: 'PROXY' | 'LOCAL' = 'PROXY'): Buffer {
  const six = source.includes(':');
  const address = six ? ipv6(source) : source.split('.').map(Number);
  const destination = six ? new Array<number>(16).fill(0) : [127, 0, 0, 1];
  const block = Buffer.from([...address, ...destination, sourcePort >> 8, sourcePort & 255, 0, 80]);
  const head = Buffer.from([
    ...V2_SIGNATURE,
    command === 'PROXY' ? 0x21 : 0x20,
    six ? 0x21 : 0x11,
    0,
    block.length,
  ]);
  return Buffer.concat([head, block]);
}

function ipv6(text: string): number[] {
  const [left = '', right = ''] = text.split('::');
  const groups = (s: string) => (s === '' ? [] : s.split(':').map((g) => Number.parseInt(g, 16)));
  const l = groups(left);
  const r = groups(right);
  const all = [...l, ...new Array<number>(8 - l.length - r.length).fill(0), ...r];
  return all.flatMap((g) => [g >> 8, g & 255]);
}

describe('parseProxyHeader', () => {
  it('reads v1 TCP4, TCP6 and UNKNOWN, and waits for the CRLF', () => {
    const line = 'PROXY TCP4 203.0.113.7 10.0.0.1 51234 80\r\nGET /';
    assert.deepEqual(parseProxyHeader(Buffer.from(line)), {
      kind: 'header',
      consumed: line.length - 5,
      source: { address: '203.0.113.7', port: 51234 },
    });
    assert.deepEqual(parseProxyHeader(Buffer.from('PROXY TCP6 2001:db8::7 ::1 1 443\r\n')), {
      kind: 'header',
      consumed: 34,
      source: { address: '2001:db8::7', port: 1 },
    });
    assert.deepEqual(parseProxyHeader(Buffer.from('PROXY UNKNOWN\r\n')), {
      kind: 'header',
      consumed: 15,
      source: undefined,
    });
    assert.deepEqual(parseProxyHeader(Buffer.from('PROXY TCP4 203.0.113.7')), { kind: 'more' });
    assert.deepEqual(parseProxyHeader(Buffer.from('PRO')), { kind: 'more' });
  });

  it('refuses every malformed v1 header', () => {
    for (const bad of [
      'GET / HTTP/1.1\r\n',
      'PROXY TCP4 203.0.113.7 10.0.0.1 51234\r\n',
      'PROXY TCP4 203.0.113.256 10.0.0.1 1 80\r\n',
      'PROXY TCP4 2001:db8::1 10.0.0.1 1 80\r\n',
      'PROXY TCP6 203.0.113.7 ::1 1 80\r\n',
      'PROXY TCP4 203.0.113.7 10.0.0.1 01 80\r\n',
      'PROXY TCP4 203.0.113.7 10.0.0.1 65536 80\r\n',
      'PROXY UDP4 203.0.113.7 10.0.0.1 1 80\r\n',
      'PROXY TCP4  203.0.113.7 10.0.0.1 1 80\r\n',
      `PROXY TCP4 ${'1'.repeat(120)}`,
    ]) {
      assert.equal(parseProxyHeader(Buffer.from(bad)).kind, 'refused', bad);
    }
  });

  it('reads v2 PROXY over IPv4 and IPv6, LOCAL, and waits for the whole block', () => {
    assert.deepEqual(parseProxyHeader(v2('198.51.100.9', 4242)), {
      kind: 'header',
      consumed: 28,
      source: { address: '198.51.100.9', port: 4242 },
    });
    assert.deepEqual(parseProxyHeader(v2('2001:db8::9', 7)), {
      kind: 'header',
      consumed: 52,
      source: { address: '2001:db8:0:0:0:0:0:9', port: 7 },
    });
    assert.deepEqual(parseProxyHeader(v2('198.51.100.9', 1, 'LOCAL')), {
      kind: 'header',
      consumed: 28,
      source: undefined,
    });
    assert.deepEqual(parseProxyHeader(v2('198.51.100.9', 1).subarray(0, 20)), { kind: 'more' });
  });

  it('refuses a wrong v2 version, command, transport or length', () => {
    const with13 = (b: number) => Buffer.from([...V2_SIGNATURE, b, 0x11, 0, 12, ...new Array(12).fill(0)]);
    assert.equal(parseProxyHeader(with13(0x11)).kind, 'refused');
    assert.equal(parseProxyHeader(with13(0x22)).kind, 'refused');
    const udp = Buffer.from([...V2_SIGNATURE, 0x21, 0x12, 0, 12, ...new Array(12).fill(0)]);
    assert.equal(parseProxyHeader(udp).kind, 'refused');
    const huge = Buffer.from([...V2_SIGNATURE, 0x21, 0x11, 0xff, 0xff]);
    assert.equal(parseProxyHeader(huge).kind, 'refused');
    const short = Buffer.from([...V2_SIGNATURE, 0x21, 0x11, 0, 4, 1, 2, 3, 4]);
    assert.equal(parseProxyHeader(short).kind, 'refused');
  });
});

/** Sends `bytes` then an HTTP/1.1 request on `socket`; resolves with everything the proxy answered until it closed. */
function exchange(socket: Socket, bytes: Buffer | undefined, request = true): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (c: string) => {
      text += c;
    });
    socket.on('error', () => {});
    socket.on('close', () => resolve(text));
    if (bytes !== undefined) socket.write(bytes);
    if (request) socket.write('GET / HTTP/1.1\r\nhost: example.com\r\nconnection: close\r\n\r\n');
  });
}

function opened(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
  });
}

describe('a proxy taking the PROXY protocol', () => {
  let proxy: PorticoProxy;
  const ports: Record<string, number> = {};
  let closeEcho: () => Promise<void>;

  before(async () => {
    const echo = await startEcho('a');
    closeEcho = () => closeServer(echo.server);
    proxy = createProxy({ bindAddress: '127.0.0.1', portMap: () => 0, log: discardingLogger });
    const cert = selfSigned('example.com', ['example.com']);
    const trusted = { trustedCidrs: ['127.0.0.0/8'], timeoutMs: 300 };
    const listeners: Listener[] = [
      { ...listener(80), proxyProtocol: trusted },
      {
        ...listener(443, { certificates: [{ hostnames: ['*'], secrets: ['ns/cert'] }] }),
        proxyProtocol: trusted,
      },
      { ...listener(81), proxyProtocol: { trustedCidrs: ['10.0.0.0/8'], timeoutMs: 300 } },
      listener(82),
    ];
    const config = fleet(
      listeners.map((l) => ({
        listener: l,
        vhosts: [vhost(l.port, '*', [route(forward(['default/a:80']))])],
      })),
      [upstream('default/a:80', [echo.port])],
      [{ name: 'ns/cert', ...cert }],
    );
    assert.deepEqual(await proxy.apply(config), { ok: true, listenerErrors: [] });
    for (const a of proxy.addresses()) ports[a.listener] = a.port;
  });

  after(async () => {
    await proxy.close();
    await closeEcho();
  });

  const forwardedFor = (answer: string) => /"X-Forwarded-For":\["([^"]*)"\]/.exec(answer)?.[1];

  it('HTTP: the v1 and v2 source is the client, the header bytes and the request in one write or apart', async () => {
    const v1 = await exchange(
      await opened(ports['port-80']!),
      Buffer.from('PROXY TCP4 203.0.113.7 10.0.0.1 51234 80\r\n'),
    );
    assert.match(v1, /^HTTP\/1\.1 200/);
    assert.equal(forwardedFor(v1), '203.0.113.7');
    const two = await exchange(await opened(ports['port-80']!), v2('2001:db8::9', 7));
    assert.equal(forwardedFor(two), '2001:db8:0:0:0:0:0:9');
    const local = await exchange(await opened(ports['port-80']!), v2('198.51.100.9', 1, 'LOCAL'));
    assert.equal(forwardedFor(local), '127.0.0.1');
  });

  it('HTTPS: the header comes before the TLS handshake', async () => {
    const raw = await opened(ports['port-443']!);
    raw.write(v2('198.51.100.20', 5555));
    const tls = tlsConnect({ socket: raw, servername: 'example.com', rejectUnauthorized: false });
    await new Promise<void>((resolve, reject) => {
      tls.once('secureConnect', () => resolve());
      tls.once('error', reject);
    });
    const answer = await exchange(tls as unknown as Socket, undefined);
    assert.match(answer, /^HTTP\/1\.1 200/);
    assert.equal(forwardedFor(answer), '198.51.100.20');
  });

  it('refuses a bad header, a header that never comes, and a peer outside the trusted CIDRs', async () => {
    assert.equal(await exchange(await opened(ports['port-80']!), Buffer.from('PROXY TCP4 nope\r\n')), '');
    assert.equal(await exchange(await opened(ports['port-80']!), undefined, false), '');
    assert.equal(await exchange(await opened(ports['port-80']!), undefined), '', 'HTTP without the header');
    assert.equal(await exchange(await opened(ports['port-81']!), Buffer.from('PROXY UNKNOWN\r\n')), '');
  });

  it('a listener without the protocol does not take its header', async () => {
    const answer = await exchange(
      await opened(ports['port-82']!),
      Buffer.from('PROXY TCP4 203.0.113.7 10.0.0.1 1 80\r\n'),
    );
    assert.match(answer, /^HTTP\/1\.1 400/);
  });
});

// SNI and Host on an HTTPS listener, end to end: a server name in any case, and every name under a wildcard,
// gets the certificate its listener entry names; a request whose Host falls under another entry than the
// connection's SNI is answered 421 (HTTP/1.1, WebSocket upgrades and HTTP/2 alike); and a TLS session obtained
// for one name never resumes a handshake for a name served by another certificate (TLS 1.2 and 1.3).
import assert from 'node:assert/strict';
import { connect as h2Connect } from 'node:http2';
import { after, before, describe, it } from 'node:test';
import { type ConnectionOptions, type TLSSocket, connect as tlsConnect } from 'node:tls';
import type { FleetConfig, RouteAction } from '../../src/ir/fleet-config.js';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy, type Proxy as PorticoProxy } from '../../src/proxy/index.js';
import { selfSigned } from '../support/certs.js';
import { fleet, listener, route, vhost } from '../support/fleet.js';

const WITHIN = { timeout: 15_000 };
const a = { name: 'default/a', ...selfSigned('a.example.com', ['a.example.com']) };
const b = { name: 'default/b', ...selfSigned('b.example.com', ['b.example.com']) };
const wild = { name: 'default/wild', ...selfSigned('wild.example.com', ['*.wild.example.com']) };
const only = { name: 'default/only', ...selfSigned('only.example.com', ['only.example.com']) };

const ok: RouteAction = { type: 'DirectResponse', status: 200 };

interface Handshake {
  /** The CN of the certificate the proxy presented, undefined when a resumed session sent none. */
  certificate: string | undefined;
  reused: boolean;
  /** The session ticket or id the proxy gave, for a later handshake to offer. */
  session: Buffer | undefined;
  /** The status of one request sent on the connection (0 when none was asked for). */
  status: number;
}

/** One TLS connection to `port`; with `host`, one HTTP/1.1 request (or an upgrade) for it, read to the end. */
function https1(
  port: number,
  options: ConnectionOptions & { host?: string; upgrade?: boolean },
): Promise<Handshake> {
  const { host, upgrade, ...tls } = options;
  return new Promise((resolve, reject) => {
    const socket: TLSSocket = tlsConnect({
      host: '127.0.0.1',
      port,
      rejectUnauthorized: false,
      ALPNProtocols: ['http/1.1'],
      ...tls,
    });
    let session: Buffer | undefined;
    let text = '';
    socket.on('session', (s: Buffer) => {
      session = s;
    });
    socket.once('secureConnect', () => {
      const upgradeLines = upgrade === true ? 'connection: upgrade\r\nupgrade: websocket\r\n' : '';
      socket.setEncoding('latin1');
      socket.write(`GET / HTTP/1.1\r\nhost: ${host ?? 'none'}\r\n${upgradeLines}connection: close\r\n\r\n`);
    });
    socket.on('data', (chunk: string) => {
      text += chunk;
    });
    socket.on('end', () => {
      const certificate = socket.getPeerCertificate().subject?.CN;
      resolve({
        certificate: typeof certificate === 'string' ? certificate : undefined,
        reused: socket.isSessionReused(),
        session,
        status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0),
      });
    });
    socket.on('error', reject);
  });
}

/** One HTTP/2 connection with SNI `servername`: the certificate it got and the status for each authority. */
function https2(
  port: number,
  servername: string,
  authorities: string[],
): Promise<{ certificate: string | undefined; statuses: number[] }> {
  return new Promise((resolve, reject) => {
    const session = h2Connect(`https://127.0.0.1:${port}`, { servername, rejectUnauthorized: false });
    session.once('error', reject);
    session.once('connect', async () => {
      const tls = session.socket as TLSSocket;
      const cn = tls.getPeerCertificate().subject?.CN;
      const statuses: number[] = [];
      for (const authority of authorities) {
        statuses.push(
          await new Promise<number>((done, fail) => {
            const stream = session.request({ ':path': '/', ':authority': authority });
            let status = 0;
            stream.on('response', (h) => {
              status = Number(h[':status']);
            });
            stream.resume();
            stream.on('error', fail);
            stream.on('close', () => done(status));
          }),
        );
      }
      session.close();
      resolve({ certificate: typeof cn === 'string' ? cn : undefined, statuses });
    });
  });
}

describe('SNI and Host on an HTTPS listener', () => {
  let proxy: PorticoProxy;
  let port: number;
  let singlePort: number;

  /** Port 443 serves three certificates; port 8443 `only`'s, and with `second` also b's for other.example.com. */
  function config(second: boolean): FleetConfig {
    const hosts = ['a.example.com', 'b.example.com', '*.wild.example.com'];
    const singleHosts = second ? ['only.example.com', 'other.example.com'] : ['only.example.com'];
    return fleet(
      [
        {
          listener: listener(443, {
            certificates: [
              { hostnames: ['a.example.com'], secrets: [a.name] },
              { hostnames: ['b.example.com'], secrets: [b.name] },
              { hostnames: ['*.wild.example.com'], secrets: [wild.name] },
            ],
          }),
          vhosts: hosts.map((h) => vhost(443, h, [route(ok)])),
        },
        {
          listener: listener(8443, {
            certificates: [
              { hostnames: ['only.example.com'], secrets: [only.name] },
              ...(second ? [{ hostnames: ['other.example.com'], secrets: [b.name] }] : []),
            ],
          }),
          vhosts: singleHosts.map((h) => vhost(8443, h, [route(ok)])),
        },
      ],
      [],
      [a, b, only, wild],
    );
  }

  before(async () => {
    proxy = createProxy({ bindAddress: '127.0.0.1', portMap: () => 0, log: discardingLogger });
    assert.deepEqual(await proxy.apply(config(false)), { ok: true, listenerErrors: [] });
    port = proxy.addresses().find((l) => l.listener === 'port-443')!.port;
    singlePort = proxy.addresses().find((l) => l.listener === 'port-8443')!.port;
  });

  after(async () => {
    await proxy.close();
  });

  it(
    'a server name in any case, and any name under a wildcard, gets its entry certificate',
    WITHIN,
    async () => {
      const cases: [string, string][] = [
        ['a.example.com', 'a.example.com'],
        ['A.Example.COM', 'a.example.com'],
        ['B.EXAMPLE.COM', 'b.example.com'],
        ['x.wild.example.com', 'wild.example.com'],
        ['X.Wild.Example.Com', 'wild.example.com'],
        ['deep.X.WILD.example.com', 'wild.example.com'],
      ];
      for (const [servername, certificate] of cases) {
        const one = await https1(port, { servername, host: servername });
        assert.equal(one.certificate, certificate, `HTTP/1.1 SNI ${servername}`);
        assert.equal(one.status, 200, `HTTP/1.1 SNI ${servername}`);
        const two = await https2(port, servername, [servername]);
        assert.equal(two.certificate, certificate, `HTTP/2 SNI ${servername}`);
        assert.deepEqual(two.statuses, [200], `HTTP/2 SNI ${servername}`);
      }
    },
  );

  it(
    'a Host under another entry than the SNI is answered 421; one under the same entry is served',
    WITHIN,
    async () => {
      const cases: [sni: string, host: string, status: number][] = [
        ['a.example.com', 'b.example.com', 421],
        ['A.EXAMPLE.COM', 'b.example.com:443', 421],
        ['a.example.com', 'A.Example.Com:443', 200],
        ['x.wild.example.com', 'Y.WILD.example.com', 200],
        ['X.Wild.Example.Com', 'a.example.com', 421],
        ['b.example.com', 'x.wild.example.com', 421],
      ];
      for (const [servername, host, status] of cases) {
        const one = await https1(port, { servername, host });
        assert.equal(one.status, status, `HTTP/1.1 SNI ${servername}, Host ${host}`);
        const upgrade = await https1(port, { servername, host, upgrade: true });
        // Served: the route is a direct response, so the upgrade gets the route's answer, not a tunnel.
        assert.equal(upgrade.status, status, `upgrade SNI ${servername}, Host ${host}`);
        const two = await https2(port, servername, [host]);
        assert.deepEqual(two.statuses, [status], `HTTP/2 SNI ${servername}, :authority ${host}`);
      }
    },
  );

  for (const version of ['TLSv1.2', 'TLSv1.3'] as const) {
    it(
      `${version}: a session never resumes a handshake for a name of another certificate`,
      WITHIN,
      async () => {
        // The control: on a listener of one certificate a session does resume, so `reused` can be seen at all.
        const single = await https1(singlePort, { servername: 'only.example.com', maxVersion: version });
        assert.ok(single.session, 'the proxy gave a session');
        const again = await https1(singlePort, {
          servername: 'only.example.com',
          maxVersion: version,
          session: single.session,
        });
        assert.equal(again.reused, true, 'a session resumes on a listener of one certificate');

        const first = await https1(port, {
          servername: 'a.example.com',
          host: 'a.example.com',
          maxVersion: version,
        });
        assert.equal(first.certificate, 'a.example.com');
        for (const servername of ['b.example.com', 'x.wild.example.com']) {
          const other = await https1(port, {
            servername,
            host: servername,
            maxVersion: version,
            session: first.session,
          });
          assert.equal(other.reused, false, `a session of a.example.com resumed for ${servername}`);
          assert.notEqual(other.certificate, 'a.example.com', servername);
          assert.equal(other.status, 200, servername);
        }
      },
    );
  }

  it('a listener that gains a second certificate stops resuming sessions across them', WITHIN, async () => {
    const before = await https1(singlePort, { servername: 'only.example.com' });
    assert.deepEqual(await proxy.apply(config(true)), { ok: true, listenerErrors: [] });
    assert.equal(proxy.addresses().find((l) => l.listener === 'port-8443')?.port, singlePort);
    const other = await https1(singlePort, {
      servername: 'other.example.com',
      host: 'other.example.com',
      session: before.session,
    });
    assert.equal(other.reused, false, 'a session of only.example.com resumed for other.example.com');
    assert.equal(other.certificate, 'b.example.com');
    assert.equal(other.status, 200);
  });
});

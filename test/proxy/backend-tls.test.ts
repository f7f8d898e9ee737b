// TLS toward backends (BackendTLSPolicy) through a running proxy: real HTTPS and h2-over-TLS backends; the chain,
// the server name and the subjectAltNames are checked, SNI is the policy's hostname, and a policy that cannot be
// honoured never lets a byte of plaintext reach the backend.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createSecureServer, type Http2SecureServer } from 'node:http2';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { type AddressInfo, createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { ClusterTls } from '../../src/ir/fleet-config.js';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy, type Proxy as PorticoProxy } from '../../src/proxy/index.js';
import { selfSigned } from '../support/certs.js';
import { forward, listener, route, simpleFleet, type Upstream, upstream, vhost } from '../support/fleet.js';
import { httpRequest } from '../support/http.js';

const BACKEND_NAME = 'backend.example.com';
const SPIFFE = 'spiffe://cluster.local/ns/default/sa/backend';
const backendCert = selfSigned(BACKEND_NAME, [BACKEND_NAME, 'alt.example.com'], [SPIFFE]);
const strangerCert = selfSigned('stranger.example.com', ['stranger.example.com']);

function policy(extra: Partial<ClusterTls> = {}): ClusterTls {
  return {
    policy: 'default/p',
    serverName: BACKEND_NAME,
    caPem: backendCert.certificatePem,
    subjectAltNames: [],
    ...extra,
  };
}

/** A cluster named after `host`, speaking `protocol` to `port` under `tls`. */
function tlsUpstream(
  host: string,
  port: number,
  tls: ClusterTls,
  protocol: 'http' | 'h2c' = 'http',
): Upstream {
  const u = upstream(host, [port]);
  return { ...u, cluster: { ...u.cluster, protocol, tls } };
}

describe('TLS to backends', () => {
  let proxy: PorticoProxy;
  let proxyPort: number;
  let https: HttpsServer;
  let h2: Http2SecureServer;
  let plain: TcpServer;
  let plainConnections = 0;
  const sniSeen: string[] = [];

  async function get(host: string): Promise<{ status: number; body: string }> {
    const reply = await httpRequest(proxyPort, '/x', { host, timeoutMs: 10_000 });
    return { status: reply.status, body: reply.body };
  }

  before(async () => {
    https = createHttpsServer(
      { cert: backendCert.certificatePem, key: backendCert.privateKeyPem, ALPNProtocols: ['http/1.1'] },
      (req, res) => {
        const socket = req.socket as typeof req.socket & { servername?: string };
        sniSeen.push(String(socket.servername));
        res.end(`tls ${req.httpVersion}`);
      },
    );
    https.listen(0, '127.0.0.1');
    await once(https, 'listening');
    h2 = createSecureServer(
      { cert: backendCert.certificatePem, key: backendCert.privateKeyPem },
      (req, res) => res.end(`tls ${req.httpVersion}`),
    );
    h2.listen(0, '127.0.0.1');
    await once(h2, 'listening');
    plain = createTcpServer((socket) => {
      plainConnections++;
      socket.destroy();
    });
    plain.listen(0, '127.0.0.1');
    await once(plain, 'listening');
    const httpsPort = (https.address() as AddressInfo).port;
    const h2Port = (h2.address() as AddressInfo).port;
    const plainPort = (plain.address() as AddressInfo).port;
    const cases: Upstream[] = [
      tlsUpstream('good', httpsPort, policy()),
      tlsUpstream('wrong-ca', httpsPort, policy({ caPem: strangerCert.certificatePem })),
      tlsUpstream('wrong-name', httpsPort, policy({ serverName: 'other.example.com' })),
      tlsUpstream(
        'san-hostname',
        httpsPort,
        policy({
          serverName: 'other.example.com',
          subjectAltNames: [{ type: 'Hostname', value: 'alt.example.com' }],
        }),
      ),
      tlsUpstream(
        'san-uri',
        httpsPort,
        policy({ serverName: 'other.example.com', subjectAltNames: [{ type: 'URI', value: SPIFFE }] }),
      ),
      tlsUpstream(
        'san-none',
        httpsPort,
        policy({
          subjectAltNames: [
            { type: 'Hostname', value: 'nobody.example.com' },
            { type: 'URI', value: 'spiffe://cluster.local/ns/default/sa/other' },
          ],
        }),
      ),
      tlsUpstream('h2', h2Port, policy(), 'h2c'),
      tlsUpstream('refused', plainPort, policy({ refused: 'ConfigMap default/ca not found' })),
    ];
    const hosts = cases.map((c) => vhost(80, c.cluster.name, [route(forward([c.cluster.name]))]));
    proxy = createProxy({ bindAddress: '127.0.0.1', portMap: () => 0, log: discardingLogger });
    const config = simpleFleet(hosts, cases);
    config.listeners = [listener(80)];
    assert.deepEqual(await proxy.apply(config), { ok: true, listenerErrors: [] });
    proxyPort = proxy.addresses().find((l) => l.listener === 'port-80')!.port;
  });

  after(async () => {
    await proxy.close();
    https.close();
    h2.close();
    plain.close();
  });

  it('speaks HTTP/1.1 over TLS to a backend whose chain and name verify, with the policy hostname as SNI', async () => {
    assert.deepEqual(await get('good'), { status: 200, body: 'tls 1.1' });
    assert.deepEqual(sniSeen, [BACKEND_NAME]);
  });

  it('speaks HTTP/2 over TLS (ALPN h2) to an h2 backend', async () => {
    assert.deepEqual(await get('h2'), { status: 200, body: 'tls 2.0' });
  });

  it('refuses a backend whose chain does not lead to the policy CA', async () => {
    assert.equal((await get('wrong-ca')).status, 502);
  });

  it('refuses a backend whose certificate does not name the policy hostname', async () => {
    assert.equal((await get('wrong-name')).status, 502);
  });

  it('with subjectAltNames, accepts a Hostname or URI SAN match instead of the hostname', async () => {
    assert.deepEqual(await get('san-hostname'), { status: 200, body: 'tls 1.1' });
    assert.deepEqual(await get('san-uri'), { status: 200, body: 'tls 1.1' });
  });

  it('with subjectAltNames, refuses a certificate naming none of them (even if it names the hostname)', async () => {
    assert.equal((await get('san-none')).status, 502);
  });

  it('fails closed for a policy that cannot be honoured: 5xx, and no connection reaches the backend', async () => {
    assert.equal((await get('refused')).status, 502);
    assert.equal(plainConnections, 0);
  });
});

describe('the Gateway client certificate toward TLS backends', () => {
  const client = selfSigned('gateway-client', ['gateway-client.example.com']);
  let proxy: PorticoProxy;
  let proxyPort: number;
  let server: HttpsServer;
  const presented: string[] = [];

  function config(withClient: boolean) {
    const u = tlsUpstream('mtls', (server.address() as AddressInfo).port, policy());
    const c = simpleFleet([vhost(80, 'mtls', [route(forward(['mtls']))])], [u]);
    if (!withClient) return c;
    return {
      ...c,
      gateways: [{ name: 'default/eg', generation: 1, backendClientCertificate: 'default/client' }],
      secrets: [{ name: 'default/client', ...client }],
    };
  }

  before(async () => {
    server = createHttpsServer(
      {
        cert: backendCert.certificatePem,
        key: backendCert.privateKeyPem,
        requestCert: true,
        rejectUnauthorized: true,
        ca: client.certificatePem,
      },
      (req, res) => {
        const socket = req.socket as typeof req.socket & {
          getPeerCertificate(): { subject?: { CN?: string } };
        };
        presented.push(String(socket.getPeerCertificate().subject?.CN));
        res.end('mtls');
      },
    );
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    proxy = createProxy({ bindAddress: '127.0.0.1', portMap: () => 0, log: discardingLogger });
    assert.deepEqual(await proxy.apply(config(true)), { ok: true, listenerErrors: [] });
    proxyPort = proxy.addresses().find((l) => l.listener === 'port-80')!.port;
  });

  after(async () => {
    await proxy.close();
    server.close();
  });

  it('presents the fleet client certificate to a backend that requires one; without it the backend refuses', async () => {
    const reply = await httpRequest(proxyPort, '/x', { host: 'mtls', timeoutMs: 10_000 });
    assert.deepEqual([reply.status, reply.body, presented], [200, 'mtls', ['gateway-client']]);
    assert.deepEqual(await proxy.apply(config(false)), { ok: true, listenerErrors: [] });
    const without = await httpRequest(proxyPort, '/x', { host: 'mtls', timeoutMs: 10_000 });
    assert.equal(without.status, 502);
    assert.deepEqual(presented, ['gateway-client']);
  });
});

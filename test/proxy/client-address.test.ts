// The real client behind load balancers: what a trusted peer reports is believed, an untrusted peer's claims never
// are, and the address found is the one the backend's x-forwarded-for, the origin header and the access log carry.
// Pure rules first, then a real proxy on loopback (whose peer is 127.0.0.1) with a real echo backend.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ClientIpPolicy } from '../../src/ir/fleet-config.js';
import { validateFleetConfig } from '../../src/ir/validate.js';
import { discardingLogger } from '../../src/platform/log-line.js';
import { compileClientIpRule, reportedClient } from '../../src/proxy/client-address.js';
import { createProxy, type Proxy as PorticoProxy } from '../../src/proxy/index.js';
import type { AccessLogOptions } from '../../src/proxy/telemetry/access-log.js';
import { fleet, forward, listener, route, upstream, vhost } from '../support/fleet.js';
import { closeServer, type EchoBody, httpRequest, startEcho, until } from '../support/http.js';

const cidrs = (trustedCidrs: string[], extra: Partial<ClientIpPolicy> = {}) =>
  compileClientIpRule({ trustedCidrs, ...extra });

describe('reportedClient', () => {
  it('walks x-forwarded-for from the right past trusted hops to the first untrusted one', () => {
    const rule = cidrs(['10.0.0.0/8', '2001:db8::/32']);
    assert.deepEqual(reportedClient(rule, '198.51.100.9, 203.0.113.7, 10.1.2.3', undefined), {
      ip: '203.0.113.7',
      chain: '203.0.113.7, 10.1.2.3',
    });
    assert.deepEqual(reportedClient(rule, '203.0.113.7,2001:db8::1', undefined), {
      ip: '203.0.113.7',
      chain: '203.0.113.7, 2001:db8::1',
    });
  });

  it('takes the leftmost entry when every hop is trusted, and stops at garbage', () => {
    const rule = cidrs(['10.0.0.0/8']);
    assert.deepEqual(reportedClient(rule, '10.0.0.1, 10.0.0.2', undefined), {
      ip: '10.0.0.1',
      chain: '10.0.0.1, 10.0.0.2',
    });
    assert.deepEqual(reportedClient(rule, '203.0.113.7, not-an-ip, 10.0.0.2', undefined), {
      ip: '10.0.0.2',
      chain: '10.0.0.2',
    });
    assert.equal(reportedClient(rule, 'unknown', undefined), undefined);
    assert.equal(reportedClient(rule, undefined, undefined), undefined);
  });

  it('counts trusted hops from the right, and believes nothing when there are fewer entries', () => {
    const rule = cidrs(['0.0.0.0/0'], { trustedHops: 2 });
    assert.deepEqual(reportedClient(rule, '1.1.1.1, 203.0.113.7, 10.0.0.1', undefined), {
      ip: '203.0.113.7',
      chain: '203.0.113.7, 10.0.0.1',
    });
    assert.equal(reportedClient(rule, '10.0.0.1', undefined), undefined);
  });

  it('reads a custom header, unwrapping an IPv4-mapped address; a non-address is not believed', () => {
    const rule = cidrs(['127.0.0.1/32'], { header: 'CF-Connecting-IP' });
    assert.deepEqual(reportedClient(rule, undefined, ' ::ffff:203.0.113.7 '), {
      ip: '203.0.113.7',
      chain: '203.0.113.7',
    });
    assert.equal(reportedClient(rule, undefined, 'evil'), undefined);
  });
});

describe('client IP policy validation', () => {
  const withPolicy = (clientIp: unknown) => {
    const config = fleet([{ listener: listener(80), vhosts: [] }]);
    (config.listeners[0] as unknown as { clientIp: unknown }).clientIp = clientIp;
    return () => validateFleetConfig(JSON.parse(JSON.stringify(config)));
  };

  it('names the field of a bad CIDR or hop count', () => {
    assert.throws(
      withPolicy({ trustedCidrs: ['10.0.0.0/33'] }),
      /listeners\[0\]\.clientIp\.trustedCidrs\[0\]/,
    );
    assert.throws(withPolicy({ trustedCidrs: ['10.0.0.0/8x'] }), /trustedCidrs\[0\]: must end in/);
    assert.throws(withPolicy({ trustedCidrs: [], trustedHops: 0 }), /clientIp\.trustedHops/);
    assert.doesNotThrow(withPolicy({ trustedCidrs: ['10.0.0.0/8', '::1/128', 'fd00::/8'], trustedHops: 1 }));
  });
});

describe('a proxy with client IP policies', () => {
  let proxy: PorticoProxy;
  const ports: Record<string, number> = {};
  const lines: Record<string, unknown>[] = [];
  let closeEcho: () => Promise<void>;

  before(async () => {
    const echo = await startEcho('a');
    closeEcho = () => closeServer(echo.server);
    const accessLog: AccessLogOptions = {
      format: 'json',
      fields: ['path', 'client_address'],
      sampling: 1,
      flushIntervalMs: 10,
      write: (text) => {
        for (const l of text.trim().split('\n')) lines.push(JSON.parse(l) as Record<string, unknown>);
      },
    };
    proxy = createProxy({ bindAddress: '127.0.0.1', portMap: () => 0, log: discardingLogger, accessLog });
    const policies: Record<number, ClientIpPolicy | undefined> = {
      80: undefined,
      81: { trustedCidrs: ['127.0.0.0/8'] },
      82: { trustedCidrs: ['10.0.0.0/8'] },
      83: { trustedCidrs: ['127.0.0.1/32'], header: 'cf-connecting-ip' },
      84: { trustedCidrs: ['127.0.0.1/32'], trustedHops: 2 },
    };
    const config = fleet(
      Object.entries(policies).map(([p, clientIp]) => ({
        listener: { ...listener(Number(p)), ...(clientIp === undefined ? {} : { clientIp }) },
        vhosts: [vhost(Number(p), '*', [route(forward(['default/a:80']))])],
      })),
      [upstream('default/a:80', [echo.port])],
    );
    assert.deepEqual(await proxy.apply(config), { ok: true, listenerErrors: [] });
    for (const a of proxy.addresses()) ports[a.listener] = a.port;
  });

  after(async () => {
    await proxy.close();
    await closeEcho();
  });

  async function seen(listenerName: string, path: string, headers: Record<string, string>) {
    const reply = await httpRequest(ports[listenerName]!, path, { headers });
    assert.equal(reply.status, 200);
    return (JSON.parse(reply.body) as EchoBody).headers;
  }

  const spoof = { 'x-forwarded-for': '203.0.113.7, 10.9.9.9', 'cf-connecting-ip': '198.51.100.4' };

  it('without a policy keeps the client list and appends the peer, as the edge always did', async () => {
    const h = await seen('port-80', '/none', spoof);
    assert.deepEqual(h['X-Forwarded-For'], ['203.0.113.7, 10.9.9.9, 127.0.0.1']);
    assert.deepEqual(h['X-Portico-Internal'], ['true']);
  });

  it('from a trusted peer believes the first untrusted hop: x-forwarded-for starts at it, origin is external', async () => {
    const h = await seen('port-81', '/trusted', spoof);
    assert.deepEqual(h['X-Forwarded-For'], ['10.9.9.9, 127.0.0.1']);
    const walked = await seen('port-81', '/trusted-walk', { 'x-forwarded-for': '203.0.113.7, 127.0.0.5' });
    assert.deepEqual(walked['X-Forwarded-For'], ['203.0.113.7, 127.0.0.5, 127.0.0.1']);
    assert.deepEqual(walked['X-Portico-External-Address'], ['203.0.113.7']);
    assert.equal(walked['X-Portico-Internal'], undefined);
  });

  it('from an untrusted peer believes nothing: its x-forwarded-for does not even reach the backend', async () => {
    const h = await seen('port-82', '/untrusted', spoof);
    assert.deepEqual(h['X-Forwarded-For'], ['127.0.0.1']);
    assert.deepEqual(h['X-Portico-Internal'], ['true']);
  });

  it('reads the custom header of a trusted peer, and counts hops', async () => {
    const h = await seen('port-83', '/header', spoof);
    assert.deepEqual(h['X-Forwarded-For'], ['198.51.100.4, 127.0.0.1']);
    assert.deepEqual(h['X-Portico-External-Address'], ['198.51.100.4']);
    const hops = await seen('port-84', '/hops', { 'x-forwarded-for': '1.1.1.1, 203.0.113.9, 10.0.0.1' });
    assert.deepEqual(hops['X-Forwarded-For'], ['203.0.113.9, 10.0.0.1, 127.0.0.1']);
  });

  it('logs the client it found as client_address', async () => {
    await seen('port-81', '/logged', { 'x-forwarded-for': '203.0.113.8' });
    await seen('port-82', '/not-believed', { 'x-forwarded-for': '203.0.113.8' });
    await until(
      () => lines.some((l) => l.path === '/not-believed') && lines.some((l) => l.path === '/logged'),
    );
    assert.equal(lines.find((l) => l.path === '/logged')?.client_address, '203.0.113.8');
    assert.equal(lines.find((l) => l.path === '/not-believed')?.client_address, '127.0.0.1');
  });
});

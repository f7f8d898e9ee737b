// The PROXY protocol from a real sender: Debian's HAProxy in TCP mode in front of a proxy's listeners, sending v1
// (`send-proxy`) to the HTTP one and v2 (`send-proxy-v2`) to the HTTPS one, whose TLS it passes through. Skips,
// saying so, when /usr/sbin/haproxy is not installed (`apt-get install -y haproxy`).
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy } from '../../src/proxy/index.js';
import { selfSigned } from '../support/certs.js';
import { fleet, forward, listener, route, upstream, vhost } from '../support/fleet.js';
import { closeServer, type EchoBody, freePort, httpRequest, startEcho } from '../support/http.js';

const HAPROXY = '/usr/sbin/haproxy';

function haproxyMissing(): string | undefined {
  try {
    execFileSync(HAPROXY, ['-v'], { stdio: 'ignore' });
    return undefined;
  } catch {
    return `${HAPROXY} is not installed (apt-get install -y haproxy): skipping the HAProxy PROXY protocol test`;
  }
}

function httpsGet(port: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/',
        servername: 'example.com',
        rejectUnauthorized: false,
        headers: { host: 'example.com' },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (c: string) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

test('HAProxy sends v1 and v2 headers a proxy takes, over HTTP and HTTPS', {
  skip: haproxyMissing(),
}, async (t) => {
  const echo = await startEcho('a');
  t.after(() => closeServer(echo.server));
  const proxy = createProxy({ bindAddress: '127.0.0.1', portMap: () => 0, log: discardingLogger });
  t.after(() => proxy.close());
  const trusted = { trustedCidrs: ['127.0.0.0/8'], timeoutMs: 2_000 };
  const https = listener(443, { certificates: [{ hostnames: ['*'], secrets: ['ns/cert'] }] });
  const config = fleet(
    [
      {
        listener: { ...listener(80), proxyProtocol: trusted },
        vhosts: [vhost(80, '*', [route(forward(['default/a:80']))])],
      },
      {
        listener: { ...https, proxyProtocol: trusted },
        vhosts: [vhost(443, '*', [route(forward(['default/a:80']))])],
      },
    ],
    [upstream('default/a:80', [echo.port])],
    [{ name: 'ns/cert', ...selfSigned('example.com', ['example.com']) }],
  );
  assert.deepEqual(await proxy.apply(config), { ok: true, listenerErrors: [] });
  const portOf = (name: string) => proxy.addresses().find((a) => a.listener === name)!.port;
  const [front1, front2] = [await freePort(), await freePort()];
  const dir = mkdtempSync(join(tmpdir(), 'portico-haproxy-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const cfg = join(dir, 'haproxy.cfg');
  writeFileSync(
    cfg,
    `defaults
  mode tcp
  timeout connect 5s
  timeout client 10s
  timeout server 10s
frontend plain
  bind 127.0.0.1:${front1}
  default_backend v1
frontend tls
  bind 127.0.0.1:${front2}
  default_backend v2
backend v1
  server portico 127.0.0.1:${portOf('port-80')} send-proxy
backend v2
  server portico 127.0.0.1:${portOf('port-443')} send-proxy-v2
`,
  );
  const haproxy: ChildProcess = spawn(HAPROXY, ['-db', '-f', cfg], { stdio: ['ignore', 'pipe', 'pipe'] });
  t.after(async () => {
    if (haproxy.exitCode !== null) return;
    const exited = new Promise((resolve) => haproxy.once('exit', resolve));
    haproxy.kill('SIGTERM');
    await exited;
  });
  // HAProxy binds before it serves: the first connection that gets an answer says it is up.
  let plain: Awaited<ReturnType<typeof httpRequest>> | undefined;
  for (let i = 0; i < 100 && plain === undefined; i++) {
    plain = await httpRequest(front1, '/').catch(() => undefined);
    if (plain === undefined) await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(plain?.status, 200);
  assert.deepEqual((JSON.parse(plain!.body) as EchoBody).headers['X-Forwarded-For'], ['127.0.0.1']);
  const secure = await httpsGet(front2);
  assert.equal(secure.status, 200);
  assert.deepEqual((JSON.parse(secure.body) as EchoBody).headers['X-Forwarded-For'], ['127.0.0.1']);
  // Straight to the listeners, without HAProxy's header: refused.
  await assert.rejects(httpRequest(portOf('port-80'), '/'));
});

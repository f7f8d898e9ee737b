// The ExternalAuth filter in a running proxy given a fleet config: fail-open against fail-closed with a service
// that hangs, a gRPC client refused with a gRPC status, a refreshed-session style response line, and what the
// metrics count for each.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import type { ExternalAuthorization } from '../../../src/ir/external-auth.js';
import { validateFleetConfig } from '../../../src/ir/validate.js';
import { discardingLogger } from '../../../src/platform/log-line.js';
import { createProxy, type Proxy as PorticoProxy } from '../../../src/proxy/index.js';
import { forward, route, simpleFleet, upstream, vhost } from '../../support/fleet.js';
import { h2Request, h2Session } from '../../support/h2.js';
import { closeServer, httpRequest, listen, startEcho } from '../../support/http.js';
import { parsePrometheus } from '../../support/prometheus.js';

function auth(extra: Partial<ExternalAuthorization>): ExternalAuthorization {
  return {
    protocol: 'HTTP',
    cluster: 'default/auth:80',
    allowedRequestHeaders: [],
    pathPrefix: '',
    allowedResponseHeaders: [],
    forwardBodyMaxBytes: 0,
    timeoutMs: 300,
    failOpen: false,
    ...extra,
  };
}

describe('ExternalAuth filter in a running proxy', () => {
  let proxy: PorticoProxy;
  let port = 0;
  const servers: Server[] = [];

  before(async () => {
    const echo = await startEcho('guarded');
    // Hangs on /hang, refuses /no with a body, lets everything else pass.
    const service = createServer((req, res) => {
      if ((req.url ?? '').startsWith('/hang')) return;
      if ((req.url ?? '').startsWith('/no')) {
        res.writeHead(403, { 'content-type': 'text/plain' });
        res.end('not you');
        return;
      }
      res.writeHead(200, { 'x-auth-user': 'alice' });
      res.end();
    });
    servers.push(echo.server, service);
    const servicePort = await listen(service);
    const filter = (a: ExternalAuthorization) => [{ type: 'ExternalAuth' as const, auth: a }];
    const config = simpleFleet(
      [
        vhost(80, 'example.com', [
          route(
            forward(['default/echo:80']),
            { path: { type: 'PathPrefix', value: '/hang/open' } },
            filter(auth({ failOpen: true })),
          ),
          route(
            forward(['default/echo:80']),
            { path: { type: 'PathPrefix', value: '/hang' } },
            filter(auth({})),
          ),
          route(
            forward(['default/echo:80']),
            { path: { type: 'PathPrefix', value: '/missing' } },
            filter(auth({ cluster: 'default/gone:80' })),
          ),
          route(forward(['default/echo:80']), {}, filter(auth({}))),
        ]),
      ],
      [upstream('default/echo:80', [echo.port]), upstream('default/auth:80', [servicePort])],
    );
    validateFleetConfig(config);
    proxy = createProxy({
      bindAddress: '127.0.0.1',
      portMap: () => 0,
      log: discardingLogger,
      metricsAddress: '127.0.0.1:0',
    });
    await proxy.started;
    assert.deepEqual(await proxy.apply(config), { ok: true, listenerErrors: [] });
    port = proxy.addresses().find((a) => a.listener === 'port-80')!.port;
  });

  after(async () => {
    await proxy.close();
    for (const s of servers) s.closeAllConnections();
    await Promise.all(servers.map(closeServer));
  });

  const get = (path: string) => httpRequest(port, path, { host: 'example.com', timeoutMs: 5_000 });

  it('a service that hangs: fail-open lets the request pass, fail-closed refuses it', async () => {
    assert.equal((await get('/hang/open')).status, 200);
    assert.equal((await get('/hang/closed')).status, 403);
  });

  it('a service the config does not have (an unresolved backendRef) refuses every request', async () => {
    assert.equal((await get('/missing')).status, 403);
  });

  it('a refusal with a body reaches an HTTP/1.1 client as sent; a gRPC client gets a gRPC status', async () => {
    const refused = await get('/no');
    assert.deepEqual(
      [refused.status, refused.body, refused.headers['content-type']],
      [403, 'not you', 'text/plain'],
    );
    const session = await h2Session(`http://127.0.0.1:${port}`);
    try {
      const reply = await h2Request(session, '/no/pkg.Svc/Call', {
        authority: 'example.com',
        method: 'POST',
        headers: { 'content-type': 'application/grpc', te: 'trailers' },
      });
      assert.equal(reply.status, 200);
      assert.equal(reply.headers['grpc-status'], '7', 'PERMISSION_DENIED');
    } finally {
      session.close();
    }
  });

  it('counts every decision, a fail-open pass under its own rule', async () => {
    const metricsPort = proxy.addresses().find((a) => a.listener === 'metrics')!.port;
    const samples = parsePrometheus(await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text());
    const rules = samples
      .filter((m) => m.name === 'portico_proxy_auth_decisions_total')
      .map((m) => `${m.labels.rule} ${m.labels.outcome} ${m.value}`)
      .sort();
    assert.ok(rules.includes('ext_authz_http_failed_open allowed 1'), rules.join('\n'));
    assert.ok(
      rules.some((r) => r.startsWith('ext_authz_http denied')),
      rules.join('\n'),
    );
  });
});

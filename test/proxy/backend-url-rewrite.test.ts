// A URLRewrite on a backendRef (Gateway API HTTPRouteBackendURLRewrite): the backend chosen gets the rewritten
// path, the prefix replaced being the route's match; another backend of the same rule is not rewritten.
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy, type Proxy as PorticoProxy } from '../../src/proxy/index.js';
import { forward, route, simpleFleet, upstream, vhost } from '../support/fleet.js';
import { closeServer, type EchoBody, httpRequest, startEcho } from '../support/http.js';

describe('URLRewrite on a backendRef', () => {
  let proxy: PorticoProxy;
  let port: number;
  const servers: Server[] = [];

  before(async () => {
    const echo = await startEcho('rewrite-pod');
    servers.push(echo.server);
    const backend = (filters: Parameters<typeof forward>[0][number]) => forward([filters]);
    const config = simpleFleet(
      [
        vhost(80, 'example.com', [
          route(
            backend({
              weight: 1,
              cluster: 'default/echo:80',
              filters: [{ type: 'URLRewrite', path: { type: 'ReplaceFullPath', value: '/rewritten-full' } }],
            }),
            { path: { type: 'PathPrefix', value: '/full' } },
          ),
          route(
            backend({
              weight: 1,
              cluster: 'default/echo:80',
              filters: [
                {
                  type: 'URLRewrite',
                  hostname: 'inner.example',
                  path: { type: 'ReplacePrefixMatch', value: '/rewritten-prefix' },
                },
              ],
            }),
            { path: { type: 'PathPrefix', value: '/prefix' } },
          ),
          route(forward(['default/echo:80'])),
        ]),
      ],
      [upstream('default/echo:80', [echo.port])],
    );
    proxy = createProxy({ bindAddress: '127.0.0.1', portMap: () => 0, log: discardingLogger });
    assert.deepEqual(await proxy.apply(config), { ok: true, listenerErrors: [] });
    port = proxy.addresses().find((a) => a.listener === 'port-80')!.port;
  });

  after(async () => {
    await proxy.close();
    await Promise.all(servers.map(closeServer));
  });

  async function seen(path: string): Promise<EchoBody> {
    const reply = await httpRequest(port, path);
    assert.equal(reply.status, 200);
    return JSON.parse(reply.body) as EchoBody;
  }

  it('replaces the whole path, keeping the query', async () => {
    assert.equal((await seen('/full/original?q=1')).path, '/rewritten-full?q=1');
  });

  it('replaces the matched prefix segment by segment, and the Host when asked', async () => {
    const body = await seen('/prefix/original');
    assert.equal(body.path, '/rewritten-prefix/original');
    assert.equal(body.host, 'inner.example');
    assert.equal((await seen('/prefix')).path, '/rewritten-prefix');
  });

  it('leaves a route without the filter as it came', async () => {
    const body = await seen('/prefixed/original');
    assert.equal(body.path, '/prefixed/original');
    assert.equal(body.host, 'example.com');
  });
});

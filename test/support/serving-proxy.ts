// An in-process proxy serving one fleet config on loopback, for tests that send it requests over HTTP/1.1 and
// HTTP/2: its port-80 listener's port and an h2c session to it; close() ends both.
import assert from 'node:assert/strict';
import type { ClientHttp2Session } from 'node:http2';
import type { FleetConfig } from '../../src/ir/fleet-config.js';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy, type Proxy as PorticoProxy } from '../../src/proxy/index.js';
import { h2Session } from './h2.js';

export interface ServingProxy {
  proxy: PorticoProxy;
  port: number;
  session: ClientHttp2Session;
  close(): Promise<void>;
}

export async function servingProxy(config: FleetConfig): Promise<ServingProxy> {
  const proxy = createProxy({ bindAddress: '127.0.0.1', portMap: () => 0, log: discardingLogger });
  assert.deepEqual(await proxy.apply(config), { ok: true, listenerErrors: [] });
  const port = proxy.addresses().find((a) => a.listener === 'port-80')!.port;
  const session = await h2Session(`http://127.0.0.1:${port}`);
  return {
    proxy,
    port,
    session,
    async close() {
      session.destroy();
      await proxy.close();
    },
  };
}

// A drain ends once stubborn clients are dealt with by the usual timeouts, not only at its maxMs: a slow head,
// a refused connection the client keeps open, an upload that stalls, and a half-closed client.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy, type Proxy as PorticoProxy } from '../../src/proxy/index.js';
import { forward, route, simpleFleet, upstream, vhost } from '../support/fleet.js';
import { closeServer, listen } from '../support/http.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('proxy drain with stubborn clients', { timeout: 15_000 }, () => {
  let proxy: PorticoProxy;
  let backend: Server;
  let port: number;
  const clients: Socket[] = [];

  before(async () => {
    // Reads uploads to their end before answering.
    backend = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.end('ok'));
    });
    const backendPort = await listen(backend);
    proxy = createProxy({
      bindAddress: '127.0.0.1',
      portMap: () => 0,
      log: discardingLogger,
      limits: { headersTimeoutMs: 300, requestTimeoutMs: 600, keepAliveTimeoutMs: 2_000 },
    });
    await proxy.started;
    const v = vhost(80, '*', [route(forward(['default/b:80']))]);
    await proxy.apply(simpleFleet([v], [upstream('default/b:80', [backendPort])]), 'v1');
    port = proxy.addresses()[0]!.port;
  });
  after(async () => {
    for (const c of clients) c.destroy();
    await proxy.close();
    await closeServer(backend);
  });

  const stubborn = (data: string, halfClose = false): void => {
    const socket = connect({ host: '127.0.0.1', port, allowHalfOpen: true });
    socket.on('error', () => {});
    socket.resume();
    socket.write(data);
    if (halfClose) socket.end();
    clients.push(socket);
  };

  it('finishes long before maxMs', { timeout: 10_000 }, async () => {
    stubborn('GET / HTTP/1.1\r\nhost: a\r\n');
    stubborn('GET / HTTP/1.1\r\nHost : a\r\n\r\n');
    stubborn('POST / HTTP/1.1\r\nhost: a\r\ncontent-length: 100\r\n\r\nten bytes.');
    stubborn('POST / HTTP/1.1\r\nhost: a\r\ncontent-length: 100\r\n\r\nten bytes.', true);
    stubborn('GET / HTTP/1.1\r\nhost: a\r\n\r\n');
    await sleep(100);
    let drained = false;
    // maxMs is beyond the suite's timeout: only the proxy's own timeouts can end this drain in time.
    await proxy.drain({ drainMs: 0, maxMs: 60_000 }).then(() => {
      drained = true;
    });
    assert.equal(drained, true);
    assert.equal(proxy.ready, false);
  });
});

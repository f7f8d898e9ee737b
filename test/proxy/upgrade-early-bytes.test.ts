// An upgrade's client bytes sent before the upstream's 101 are not lost: they reach the upstream after it.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import type { Duplex } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy, type Proxy as PorticoProxy } from '../../src/proxy/index.js';
import { forward, route, simpleFleet, upstream, vhost } from '../support/fleet.js';
import { closeServer, listen } from '../support/http.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('proxy upgrade pass-through', { timeout: 10_000 }, () => {
  let proxy: PorticoProxy;
  let backend: Server;
  let port: number;
  let received = '';
  const tunnels: Duplex[] = [];

  before(async () => {
    // Answers 101 only after 300 ms, then records what comes through the tunnel.
    backend = createServer((_req, res) => res.end());
    backend.on('upgrade', (_req, socket, head) => {
      tunnels.push(socket);
      if (_req.url === '/decline') {
        socket.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
        return;
      }
      received += head.toString();
      setTimeout(() => {
        socket.write('HTTP/1.1 101 Switching Protocols\r\nconnection: upgrade\r\nupgrade: test\r\n\r\n');
        socket.on('data', (c: Buffer) => {
          received += c.toString();
        });
      }, 300);
    });
    const backendPort = await listen(backend);
    proxy = createProxy({ bindAddress: '127.0.0.1', portMap: () => 0, log: discardingLogger });
    await proxy.started;
    const v = vhost(80, '*', [route(forward(['default/b:80']))]);
    await proxy.apply(simpleFleet([v], [upstream('default/b:80', [backendPort])]), 'v1');
    port = proxy.addresses()[0]!.port;
  });
  after(async () => {
    await proxy.close();
    for (const socket of tunnels) socket.destroy();
    await closeServer(backend);
  });

  it('delivers bytes the client sent before the 101, then those after it, in order', async () => {
    const client = connect({ host: '127.0.0.1', port });
    let reply = '';
    client.setEncoding('latin1');
    client.on('data', (c: string) => {
      reply += c;
    });
    client.write('GET /ws HTTP/1.1\r\nhost: a.test\r\nconnection: upgrade\r\nupgrade: test\r\n\r\nHEAD ');
    await sleep(100);
    client.write('EARLY ');
    while (!reply.includes('\r\n\r\n')) await sleep(10);
    assert.match(reply, /^HTTP\/1\.1 101 /);
    client.write('LATE');
    while (!received.endsWith('LATE') && received.length < 15) await sleep(10);
    client.destroy();
    assert.equal(received, 'HEAD EARLY LATE');
  });

  it('frees the socket of a declined upgrade though the client never closes', async () => {
    const client = connect({ host: '127.0.0.1', port, allowHalfOpen: true });
    let reply = '';
    let gone = false;
    client.setEncoding('latin1');
    client.on('data', (c: string) => {
      reply += c;
    });
    client.on('error', () => {
      gone = true;
    });
    client.on('close', () => {
      gone = true;
    });
    client.write('GET /decline HTTP/1.1\r\nhost: a.test\r\nconnection: upgrade\r\nupgrade: test\r\n\r\n');
    while (!reply.includes('\r\n\r\n')) await sleep(10);
    assert.match(reply, /^HTTP\/1\.1 403 /);
    // Once the proxy has closed its socket, writing to it is refused (reset); the suite's timeout bounds this.
    while (!gone) {
      if (client.writable) client.write('x');
      await sleep(100);
    }
    client.destroy();
  });
});

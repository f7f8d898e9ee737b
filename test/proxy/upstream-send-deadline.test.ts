// A backend that stops reading a request body fails the request after the send deadline, on a route without a
// timeout (as every GRPCRoute is by default): 504 when no response head came, the upstream connection or stream
// closed, nothing left in flight. Before the deadline, such a body waited on the backend for ever (its client's
// stall timer does not run while the proxy holds the client back for the upstream's sake).
import assert from 'node:assert/strict';
import { createServer as createH2Server, type Http2Server, type ServerHttp2Stream } from 'node:http2';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy, type InProcessProxy } from '../../src/proxy/proxy.js';
import { forward, route, simpleFleet, upstream, vhost } from '../support/fleet.js';
import { h2Session } from '../support/h2.js';
import { settledWithin, within } from '../support/http.js';

const SEND_TIMEOUT_MS = 500;
const WITHIN_MS = 10_000;

describe('proxy: the upstream send deadline', () => {
  let proxy: InProcessProxy;
  let port: number;
  /** HTTP/1.1 backend: takes the connection, reads nothing, answers nothing. */
  let deaf: Server;
  const deafSockets: Socket[] = [];
  /** h2c backend: takes the stream, reads nothing, answers nothing. */
  let deafH2: Http2Server;
  const deafStreams: ServerHttp2Stream[] = [];

  before(async () => {
    deaf = createServer((socket) => {
      socket.on('error', () => {});
      socket.pause();
      deafSockets.push(socket);
    });
    await new Promise<void>((resolve) => deaf.listen({ host: '127.0.0.1', port: 0 }, resolve));
    deafH2 = createH2Server();
    deafH2.on('stream', (stream: ServerHttp2Stream) => {
      stream.on('error', () => {});
      stream.pause();
      deafStreams.push(stream);
    });
    await new Promise<void>((resolve) => deafH2.listen({ host: '127.0.0.1', port: 0 }, resolve));
    proxy = createProxy({
      bindAddress: '127.0.0.1',
      portMap: () => 0,
      log: discardingLogger,
      upstreamSendTimeoutMs: SEND_TIMEOUT_MS,
    });
    const h2c = upstream('deaf-h2c', [(deafH2.address() as { port: number }).port]);
    h2c.cluster.protocol = 'h2c';
    await proxy.apply(
      simpleFleet(
        [
          vhost(80, 'example.com', [
            route(forward(['deaf-h2c'], { timeoutMs: 0 }), { path: { type: 'PathPrefix', value: '/h2c' } }),
            route(forward(['deaf'], { timeoutMs: 0 })),
          ]),
        ],
        [upstream('deaf', [(deaf.address() as { port: number }).port]), h2c],
      ),
    );
    port = proxy.addresses()[0]!.port;
  });

  after(async () => {
    await proxy.close();
    for (const socket of deafSockets) socket.destroy();
    await new Promise<void>((resolve) => deaf.close(() => resolve()));
    await new Promise<void>((resolve) => deafH2.close(() => resolve()));
  });

  /** Uploads over HTTP/1.1 until the proxy answers; the status it gave. */
  function uploadH1(path: string): Promise<string> {
    return new Promise((resolve) => {
      const socket = connect({ host: '127.0.0.1', port });
      socket.on('error', () => {});
      let reply = '';
      const chunk = Buffer.alloc(64 * 1024, 97);
      const pump = (): void => {
        while (reply === '' && !socket.destroyed && socket.write(chunk));
      };
      socket.on('data', (data: Buffer) => {
        reply += data.toString('latin1');
        if (reply.includes('\r\n\r\n')) {
          resolve(reply.slice(0, reply.indexOf('\r\n')));
          socket.destroy();
        }
      });
      socket.on('close', () => resolve(reply.slice(0, reply.indexOf('\r\n'))));
      socket.on('drain', pump);
      socket.write(`POST ${path} HTTP/1.1\r\nhost: example.com\r\ncontent-length: ${1 << 30}\r\n\r\n`);
      pump();
    });
  }

  it('answers 504 to an HTTP/1.1 upload its HTTP/1.1 backend stopped reading, and closes that connection', async () => {
    const before = deafSockets.length;
    assert.equal(
      await settledWithin(WITHIN_MS, uploadH1('/upload'), 'HTTP/1.1 upload'),
      'HTTP/1.1 504 Gateway Timeout',
    );
    const upstreamSide = deafSockets[before]!;
    // Reading what the kernel holds, the backend then sees the proxy's end.
    upstreamSide.on('close', () => {});
    upstreamSide.resume();
    await within(
      WITHIN_MS,
      () => upstreamSide.readableEnded || upstreamSide.destroyed || upstreamSide.closed,
      () => 'the proxy kept its connection to the deaf backend',
    );
    await within(
      WITHIN_MS,
      () => proxy.inFlight() === 0,
      () => `in flight: ${proxy.inFlight()}`,
    );
  });

  it('answers 504 to an HTTP/2 upload its h2c backend stopped reading, and cancels that stream', async () => {
    const before = deafStreams.length;
    const session = await h2Session(`http://127.0.0.1:${port}`);
    try {
      const upload = new Promise<number>((resolve) => {
        const stream = session.request({
          ':method': 'POST',
          ':path': '/h2c/upload',
          ':authority': 'example.com',
        });
        stream.on('error', () => {});
        stream.on('response', (headers) => resolve(Number(headers[':status'])));
        stream.on('close', () => resolve(0));
        const chunk = Buffer.alloc(64 * 1024, 97);
        const pump = (): void => {
          while (!stream.destroyed && stream.write(chunk));
        };
        stream.on('drain', pump);
        pump();
      });
      assert.equal(await settledWithin(WITHIN_MS, upload, 'HTTP/2 upload'), 504);
      const upstreamSide = deafStreams[before]!;
      await within(
        WITHIN_MS,
        () => upstreamSide.closed || upstreamSide.destroyed,
        () => 'the proxy kept its stream to the deaf backend',
      );
      await within(
        WITHIN_MS,
        () => proxy.inFlight() === 0,
        () => `in flight: ${proxy.inFlight()}`,
      );
    } finally {
      session.destroy();
    }
  });
});

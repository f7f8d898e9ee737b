// A response head goes to the client as soon as the upstream's head arrives, before any body byte: a
// server-streaming gRPC call whose backend sent its headers (metadata) and waits shows them to the client, as
// does an HTTP/1.1 stream (server-sent events) that sent its head and waits; from h2c and HTTP/1.1 backends, to
// HTTP/2 and HTTP/1.1 clients. An upstream's trailers-only answer (HEADERS with END_STREAM) still reaches the
// client as that one frame.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import {
  createServer as createH2Server,
  type Http2Server,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
} from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { discardingLogger } from '../../src/platform/log-line.js';
import { createProxy, type InProcessProxy } from '../../src/proxy/proxy.js';
import { forward, route, simpleFleet, upstream, vhost } from '../support/fleet.js';
import { grpcClient, h2Session } from '../support/h2.js';
import { END_HEADERS, END_STREAM, frame, HEADERS, rawH2, requestBlock } from '../support/h2-frames.js';
import { within } from '../support/http.js';
import { type StreamingBackend, startH1Streamer, startH2cStreamer } from '../support/streaming-backends.js';

/** The head is sent at once; this bounds the wait (the route has no timeout). */
const HEAD_WITHIN_MS = 5_000;

describe('proxy: response heads are not held for the body', () => {
  let proxy: InProcessProxy;
  let port: number;
  let h2cBackend: StreamingBackend;
  let h1Backend: StreamingBackend;
  /** An h2c backend answering gRPC-style: headers then nothing (`/hold/...`), or trailers-only (`/status/...`). */
  let grpcBackend: Http2Server;
  const grpcStreams: ServerHttp2Stream[] = [];

  before(async () => {
    h2cBackend = await startH2cStreamer();
    h1Backend = await startH1Streamer();
    grpcBackend = createH2Server();
    grpcBackend.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
      stream.on('error', () => {});
      grpcStreams.push(stream);
      if (String(headers[':path']).startsWith('/status/')) {
        stream.respond(
          { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '5', 'grpc-message': 'nope' },
          { endStream: true },
        );
        return;
      }
      // Server streaming: the response metadata now, the messages later (never, here).
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'x-metadata': 'early' });
    });
    await new Promise<void>((resolve) => grpcBackend.listen({ host: '127.0.0.1', port: 0 }, resolve));
    const grpcPort = (grpcBackend.address() as AddressInfo).port;
    proxy = createProxy({ bindAddress: '127.0.0.1', portMap: () => 0, log: discardingLogger });
    const h2c = (name: string, backendPort: number) => {
      const u = upstream(name, [backendPort]);
      u.cluster.protocol = 'h2c';
      return u;
    };
    const prefix = (value: string) => ({ path: { type: 'PathPrefix' as const, value } });
    await proxy.apply(
      simpleFleet(
        [
          vhost(80, 'example.com', [
            route(forward(['grpc'], { timeoutMs: 0 }), prefix('/hold')),
            route(forward(['grpc'], { timeoutMs: 0 }), prefix('/status')),
            route(forward(['streamer-h2c'], { timeoutMs: 0 }), prefix('/h2c')),
            route(forward(['streamer-h1'], { timeoutMs: 0 })),
          ]),
        ],
        [
          h2c('grpc', grpcPort),
          h2c('streamer-h2c', h2cBackend.port),
          upstream('streamer-h1', [h1Backend.port]),
        ],
      ),
    );
    port = proxy.addresses()[0]!.port;
  });

  after(async () => {
    await proxy.close();
    await h2cBackend.close();
    await h1Backend.close();
    for (const stream of grpcStreams) stream.destroy();
    await new Promise<void>((resolve) => grpcBackend.close(() => resolve()));
  });

  it('shows a server-streaming gRPC call its metadata while the backend waits (@grpc/grpc-js)', async () => {
    const client = grpcClient(port);
    try {
      const call = client.makeServerStreamRequest(
        '/hold/Stream',
        (m: Buffer) => m,
        (m: Buffer) => m,
        Buffer.alloc(0),
        new grpc.Metadata(),
        {},
      );
      call.on('error', () => {});
      let metadata: grpc.Metadata | undefined;
      let messages = 0;
      call.on('metadata', (m: grpc.Metadata) => {
        metadata = m;
      });
      call.on('data', () => {
        messages++;
      });
      await within(
        HEAD_WITHIN_MS,
        () => metadata !== undefined,
        () => 'no response metadata while the backend waits',
      );
      assert.deepEqual(metadata!.get('x-metadata'), ['early']);
      assert.equal(messages, 0);
      call.cancel();
    } finally {
      client.close();
    }
  });

  for (const backend of ['h2c', 'HTTP/1.1'] as const) {
    const path = backend === 'h2c' ? '/h2c/hold?hold=1' : '/h1/hold?hold=1';

    it(`sends an HTTP/2 client the head of an ${backend} response whose body has not started`, async () => {
      const session = await h2Session(`http://127.0.0.1:${port}`);
      session.on('error', () => {});
      try {
        const stream = session.request({ ':path': path, ':authority': 'example.com' });
        stream.on('error', () => {});
        let status = 0;
        let bodyBytes = 0;
        stream.on('response', (headers) => {
          status = Number(headers[':status']);
        });
        stream.on('data', (chunk: Buffer) => {
          bodyBytes += chunk.length;
        });
        await within(
          HEAD_WITHIN_MS,
          () => status !== 0,
          () => 'no response head while the backend waits',
        );
        assert.equal(status, 200);
        assert.equal(bodyBytes, 0);
      } finally {
        session.destroy();
      }
    });

    it(`sends an HTTP/1.1 client the head of an ${backend} response whose body has not started`, async () => {
      let status = 0;
      const req = request({ host: '127.0.0.1', port, path, headers: { host: 'example.com' }, agent: false });
      req.on('error', () => {});
      req.on('response', (res) => {
        status = res.statusCode ?? 0;
        res.resume();
      });
      req.end();
      try {
        await within(
          HEAD_WITHIN_MS,
          () => status !== 0,
          () => 'no response head while the backend waits',
        );
        assert.equal(status, 200);
      } finally {
        req.destroy();
      }
    });
  }

  it("relays an h2c upstream's trailers-only answer as one HEADERS frame with END_STREAM", async () => {
    const { socket, frames } = await rawH2(port);
    try {
      const block = Buffer.concat([
        requestBlock('/status/M', 'example.com'),
        // content-type (static index 31): application/grpc, so the proxy reads it as gRPC.
        Buffer.from([0x0f, 31 - 15, 16]),
        Buffer.from('application/grpc', 'latin1'),
      ]);
      socket.write(frame(HEADERS, END_HEADERS | END_STREAM, 1, block));
      await within(
        HEAD_WITHIN_MS,
        () => frames.some((f) => f.streamId === 1 && (f.flags & END_STREAM) !== 0),
        () => `stream 1 did not end: ${frames.length} frames`,
      );
      const ofStream = frames.filter((f) => f.streamId === 1);
      assert.deepEqual(
        ofStream.map((f) => [f.type, f.flags & END_STREAM]),
        [[HEADERS, END_STREAM]],
      );
    } finally {
      socket.destroy();
    }
  });
});

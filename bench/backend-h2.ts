// The HTTP/2 benchmark's upstream: h2c with prior knowledge, as cheap as node:http2 allows. A gRPC request
// (content-type application/grpc) gets its message echoed back with grpc-status 0 in the trailers; anything
// else gets a two-byte body.
import { constants, createServer, type ServerHttp2Stream } from 'node:http2';
import type { AddressInfo } from 'node:net';

const { HTTP2_HEADER_CONTENT_TYPE, HTTP2_HEADER_STATUS } = constants;

function answerGrpc(stream: ServerHttp2Stream): void {
  const parts: Buffer[] = [];
  stream.on('data', (chunk: Buffer) => parts.push(chunk));
  stream.on('end', () => {
    stream.respond(
      { [HTTP2_HEADER_STATUS]: 200, [HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc' },
      { waitForTrailers: true },
    );
    stream.once('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    stream.end(Buffer.concat(parts));
  });
}

const server = createServer({ settings: { maxConcurrentStreams: 1000 } }, undefined);
server.on('stream', (stream, headers) => {
  const type = headers[HTTP2_HEADER_CONTENT_TYPE];
  if (typeof type === 'string' && type.startsWith('application/grpc')) {
    answerGrpc(stream);
    return;
  }
  stream.respond({ [HTTP2_HEADER_STATUS]: 200, [HTTP2_HEADER_CONTENT_TYPE]: 'text/plain' });
  stream.end('ok');
  stream.resume();
});
server.listen({ host: '127.0.0.1', port: 0 }, () => {
  console.log(`backend listening on 127.0.0.1:${(server.address() as AddressInfo).port}`);
});
process.on('SIGTERM', () => process.exit(0));

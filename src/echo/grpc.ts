// The echo backend's gRPC service (proto/portico/echo/v1/echo.proto) over node:http2's compatibility API:
// gRPC's length-prefixed framing and the two string-only messages are small enough to encode by hand.
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';

export const ECHO_METHOD = '/portico.echo.v1.Echo/Echo';

export interface EchoReply {
  message: string;
  pod: string;
  authority: string;
  path: string;
}

function varint(n: number): number[] {
  const out: number[] = [];
  let v = n;
  while (v >= 0x80) {
    out.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  out.push(v);
  return out;
}

/** Protobuf wire form of string fields 1..n (field i+1 = values[i]); empty strings are left out, as proto3 does. */
export function encodeStrings(values: string[]): Buffer {
  const parts: Buffer[] = [];
  values.forEach((value, i) => {
    if (value === '') return;
    const bytes = Buffer.from(value, 'utf8');
    parts.push(Buffer.from([((i + 1) << 3) | 2, ...varint(bytes.length)]), bytes);
  });
  return Buffer.concat(parts);
}

/** String fields of a protobuf message by field number; other wire types are skipped. */
export function decodeStrings(bytes: Buffer): Map<number, string> {
  const out = new Map<number, string>();
  let i = 0;
  const readVarint = (): number => {
    let n = 0;
    let shift = 0;
    for (;;) {
      const b = bytes[i++];
      if (b === undefined) throw new Error('truncated varint');
      n += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return n;
      shift += 7;
    }
  };
  while (i < bytes.length) {
    const key = readVarint();
    const wire = key & 7;
    if (wire === 2) {
      const length = readVarint();
      out.set(key >>> 3, bytes.toString('utf8', i, i + length));
      i += length;
    } else if (wire === 0) readVarint();
    else if (wire === 1) i += 8;
    else if (wire === 5) i += 4;
    else throw new Error(`unsupported wire type ${wire}`);
  }
  return out;
}

/** One gRPC message frame: uncompressed flag, 4-byte length, the message. */
export function grpcFrame(message: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(message.length, 1);
  return Buffer.concat([head, message]);
}

/** Answers a gRPC call: Echo.Echo echoes, anything else is UNIMPLEMENTED (trailers-only). */
export function serveGrpc(pod: string, req: Http2ServerRequest, res: Http2ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    if (req.url !== ECHO_METHOD) {
      res.writeHead(200, {
        'content-type': 'application/grpc',
        'grpc-status': '12',
        'grpc-message': 'unknown method',
      });
      res.end();
      return;
    }
    const body = Buffer.concat(chunks);
    const message =
      body.length >= 5 ? (decodeStrings(body.subarray(5, 5 + body.readUInt32BE(1))).get(1) ?? '') : '';
    const authority = req.headers[':authority'] ?? '';
    const reply = encodeStrings([message, pod, authority, req.url]);
    res.writeHead(200, { 'content-type': 'application/grpc' });
    res.addTrailers({ 'grpc-status': '0', 'grpc-message': '' });
    res.end(grpcFrame(reply));
  });
}

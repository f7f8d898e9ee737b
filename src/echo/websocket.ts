// A minimal RFC 6455 server side for the echo backend: handshake, then every data frame is sent back.
// Also the frame codec the tests use as a client (masking is the only difference).
import { createHash, randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

export function websocketAccept(key: string): string {
  return createHash('sha1')
    .update(key + GUID)
    .digest('base64');
}

export interface Frame {
  opcode: number;
  payload: Buffer;
}

export function encodeFrame(opcode: number, payload: Buffer, mask: boolean): Buffer {
  const length = payload.length;
  const lengthBytes = length < 126 ? 0 : length < 65536 ? 2 : 8;
  const head = Buffer.alloc(2 + lengthBytes + (mask ? 4 : 0));
  head[0] = 0x80 | opcode;
  head[1] = (mask ? 0x80 : 0) | (lengthBytes === 0 ? length : lengthBytes === 2 ? 126 : 127);
  if (lengthBytes === 2) head.writeUInt16BE(length, 2);
  if (lengthBytes === 8) head.writeBigUInt64BE(BigInt(length), 2);
  if (!mask) return Buffer.concat([head, payload]);
  const key = randomBytes(4);
  key.copy(head, 2 + lengthBytes);
  const masked = Buffer.from(payload);
  for (let i = 0; i < masked.length; i++) masked[i]! ^= key[i % 4]!;
  return Buffer.concat([head, masked]);
}

/** Splits complete frames off the front of `buffer`; returns them and the unconsumed rest. */
export function decodeFrames(buffer: Buffer): { frames: Frame[]; rest: Buffer } {
  const frames: Frame[] = [];
  let offset = 0;
  while (buffer.length - offset >= 2) {
    const b1 = buffer[offset + 1]!;
    let length = b1 & 0x7f;
    let at = offset + 2;
    if (length === 126) {
      if (buffer.length < at + 2) break;
      length = buffer.readUInt16BE(at);
      at += 2;
    } else if (length === 127) {
      if (buffer.length < at + 8) break;
      length = Number(buffer.readBigUInt64BE(at));
      at += 8;
    }
    const masked = (b1 & 0x80) !== 0;
    const key = masked ? buffer.subarray(at, at + 4) : undefined;
    if (masked) at += 4;
    if (buffer.length < at + length) break;
    const payload = Buffer.from(buffer.subarray(at, at + length));
    if (key !== undefined) for (let i = 0; i < payload.length; i++) payload[i]! ^= key[i % 4]!;
    frames.push({ opcode: buffer[offset]! & 0x0f, payload });
    offset = at + length;
  }
  return { frames, rest: buffer.subarray(offset) };
}

export function acceptWebSocket(req: IncomingMessage, socket: Duplex, head: Buffer): void {
  socket.on('error', () => socket.destroy());
  const key = req.headers['sec-websocket-key'];
  if (req.headers.upgrade?.toLowerCase() !== 'websocket' || typeof key !== 'string') {
    socket.end('HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
    return;
  }
  socket.write(
    `HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-accept: ${websocketAccept(key)}\r\n\r\n`,
  );
  let pending = head;
  const onData = (chunk: Buffer): void => {
    const { frames, rest } = decodeFrames(Buffer.concat([pending, chunk]));
    pending = rest;
    for (const frame of frames) {
      if (frame.opcode === 0x8) {
        socket.end(encodeFrame(0x8, frame.payload, false));
        return;
      }
      if (frame.opcode === 0x9) socket.write(encodeFrame(0xa, frame.payload, false));
      else if (frame.opcode !== 0xa) socket.write(encodeFrame(frame.opcode, frame.payload, false));
    }
  };
  socket.on('data', onData);
  socket.on('end', () => socket.destroy());
  if (head.length > 0) onData(Buffer.alloc(0));
}

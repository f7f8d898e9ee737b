// Raw HTTP/2 frames for tests that must send what a well-behaved client library will not.
import { connect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

export const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
export const HEADERS = 0x1;
export const RST_STREAM = 0x3;
export const SETTINGS = 0x4;
export const PING = 0x6;
export const GOAWAY = 0x7;
export const WINDOW_UPDATE = 0x8;
export const CONTINUATION = 0x9;
export const END_STREAM = 0x1;
export const END_HEADERS = 0x4;
/** SETTINGS_INITIAL_WINDOW_SIZE: the flow-control window the peer may fill on each of our streams. */
export const SETTINGS_INITIAL_WINDOW_SIZE = 0x4;

export function frame(
  type: number,
  flags: number,
  streamId: number,
  payload: Buffer = Buffer.alloc(0),
): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(streamId & 0x7fffffff, 5);
  return Buffer.concat([head, payload]);
}

export const DATA = 0x0;

/** An HPACK literal (without indexing) whose name is static-table entry `index` (< 143); short values only. */
function literal(index: number, value: string): Buffer {
  const name = index < 15 ? [index] : [0x0f, index - 15];
  return Buffer.concat([Buffer.from([...name, value.length]), Buffer.from(value, 'latin1')]);
}

/** An HPACK integer with an `n`-bit prefix whose upper bits are `flags` (RFC 7541 §5.1). */
function hpackInteger(value: number, n: number, flags: number): Buffer {
  const max = (1 << n) - 1;
  if (value < max) return Buffer.from([flags | value]);
  const bytes = [flags | max];
  let rest = value - max;
  while (rest >= 128) {
    bytes.push((rest % 128) | 128);
    rest = Math.floor(rest / 128);
  }
  bytes.push(rest);
  return Buffer.from(bytes);
}

/** An HPACK literal field without indexing, with a new name: any name and value length (no Huffman). */
export function literalField(name: string, value: string): Buffer {
  return Buffer.concat([
    Buffer.from([0x00]),
    hpackInteger(name.length, 7, 0),
    Buffer.from(name, 'latin1'),
    hpackInteger(value.length, 7, 0),
    Buffer.from(value, 'latin1'),
  ]);
}

/** A header block as HEADERS plus CONTINUATION frames of at most 16 KiB (the default SETTINGS_MAX_FRAME_SIZE). */
export function headerFrames(streamId: number, block: Buffer, endStream: boolean): Buffer {
  const pieces: Buffer[] = [];
  for (let at = 0; at === 0 || at < block.length; at += 16_384) pieces.push(block.subarray(at, at + 16_384));
  return Buffer.concat(
    pieces.map((piece, i) => {
      const last = i === pieces.length - 1 ? END_HEADERS : 0;
      if (i === 0) return frame(HEADERS, last | (endStream ? END_STREAM : 0), streamId, piece);
      return frame(CONTINUATION, last, streamId, piece);
    }),
  );
}

/** An RST_STREAM frame with error `code`. */
export function rstStream(streamId: number, code: number): Buffer {
  const payload = Buffer.alloc(4);
  payload.writeUInt32BE(code);
  return frame(RST_STREAM, 0, streamId, payload);
}

/** The DATA payloads the server sent on `streamId`, in order. */
export function dataOf(frames: ReceivedFrame[], streamId: number): Buffer {
  return Buffer.concat(
    frames.filter((f) => f.type === DATA && f.streamId === streamId).map((f) => f.payload),
  );
}

/** A request header block: :method GET (POST with a content-length), :scheme http, :path and :authority. */
export function requestBlock(path: string, authority: string, contentLength?: number): Buffer {
  const method = contentLength === undefined ? 0x82 : 0x83;
  const parts = [Buffer.from([method, 0x86]), literal(4, path), literal(1, authority)];
  if (contentLength !== undefined) parts.push(literal(28, String(contentLength)));
  return Buffer.concat(parts);
}

/** A SETTINGS frame with `entries` as (identifier, value) pairs. */
export function settingsFrame(entries: [number, number][]): Buffer {
  const payload = Buffer.alloc(6 * entries.length);
  entries.forEach(([id, value], i) => {
    payload.writeUInt16BE(id, 6 * i);
    payload.writeUInt32BE(value, 6 * i + 2);
  });
  return frame(SETTINGS, 0, 0, payload);
}

export function windowUpdate(streamId: number, increment: number): Buffer {
  const payload = Buffer.alloc(4);
  payload.writeUInt32BE(increment);
  return frame(WINDOW_UPDATE, 0, streamId, payload);
}

export interface ReceivedFrame {
  type: number;
  flags: number;
  streamId: number;
  payload: Buffer;
}

/**
 * A raw connection: sends the preface and `settings` (empty by default), collects every frame the server sends.
 * `tls`: over TLS with ALPN h2, `servername` as SNI (the certificate is not checked). `from`: the client's own
 * loopback address (another client, as the proxy sees it). `reset()` sends a TCP RST.
 */
export function rawH2(
  port: number,
  settings: Buffer = frame(SETTINGS, 0, 0),
  tls?: { servername: string },
  from = '127.0.0.1',
): Promise<{ socket: Socket; frames: ReceivedFrame[]; closed: Promise<void>; reset: () => void }> {
  return new Promise((resolve, reject) => {
    const tcp = connect({ host: '127.0.0.1', port, localAddress: from });
    const socket =
      tls === undefined
        ? tcp
        : tlsConnect({
            socket: tcp,
            servername: tls.servername,
            ALPNProtocols: ['h2'],
            rejectUnauthorized: false,
          });
    const frames: ReceivedFrame[] = [];
    let pending = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 9) {
        const length = pending.readUIntBE(0, 3);
        if (pending.length < 9 + length) break;
        frames.push({
          type: pending[3]!,
          flags: pending[4]!,
          streamId: pending.readUInt32BE(5) & 0x7fffffff,
          payload: pending.subarray(9, 9 + length),
        });
        pending = pending.subarray(9 + length);
      }
    });
    socket.on('error', () => {});
    const closed = new Promise<void>((done) => socket.on('close', () => done()));
    socket.once(tls === undefined ? 'connect' : 'secureConnect', () => {
      socket.write(Buffer.concat([PREFACE, settings]));
      // A TCP reset (RST) of the connection under TLS too.
      resolve({ socket, frames, closed, reset: () => tcp.resetAndDestroy() });
    });
    socket.once('error', reject);
  });
}

/** The error code of the GOAWAY among `frames`, if one came. */
export function goawayCode(frames: ReceivedFrame[]): number | undefined {
  const goaway = frames.find((f) => f.type === GOAWAY);
  return goaway?.payload.readUInt32BE(4);
}

// An accepted plain TCP socket read into one buffer all such sockets share, as net.connect's `onread` option
// reads a client socket: no buffer allocated per read and no stream machinery between the read and its parser
// (a socket's 'data' events were a sixth of what a proxied request cost). Node offers `onread` only to sockets
// it connects; an accepted socket gets the same through the fields that option sets, which this finds on the
// socket and uses only when they are there as expected (else the caller keeps 'data' events). Whoever takes
// the socket over later (an upgrade's tunnel) still gets its bytes as a stream: `release` makes each read a
// copy pushed to the socket, exactly as Node does for a socket without `onread`.
import type { Socket } from 'node:net';

/** Every shared-read socket reads into this; a read's bytes are valid only during its callback. */
const SHARED = Buffer.allocUnsafe(64 * 1024);

/** Node's per-socket `onread` fields (the buffer, and the callback it calls after a read), found by name. */
interface OnreadFields {
  buffer: symbol;
  callback: symbol;
}

let fields: OnreadFields | null | undefined;

function onreadFields(socket: Socket): OnreadFields | null {
  if (fields === undefined) {
    const symbols = Object.getOwnPropertySymbols(socket);
    const buffer = symbols.find((s) => s.description === 'kBuffer');
    const callback = symbols.find((s) => s.description === 'kBufferCb');
    const own = socket as unknown as Record<symbol, unknown>;
    fields =
      buffer !== undefined && callback !== undefined && own[buffer] === null && own[callback] === null
        ? { buffer, callback }
        : null;
  }
  return fields;
}

type Handle = { useUserBuffer?: (buffer: Uint8Array) => void; reading?: boolean };

/** Reads of a socket as views of the shared buffer; `release` hands them back to the socket's stream. */
export interface SharedReads {
  /** From now on each read is pushed to the socket as a copy: for whoever takes the socket over. */
  release(): void;
}

/**
 * Makes `socket` (accepted, plain TCP, reading) call `onRead(view)` for each read, the view valid only during
 * the call. Returns undefined when this Node does not let it (the socket then goes on with 'data' events).
 */
export function readShared(socket: Socket, onRead: (bytes: Buffer) => void): SharedReads | undefined {
  const handle = (socket as unknown as { _handle: Handle | null })._handle;
  if (handle === null || typeof handle.useUserBuffer !== 'function') return undefined;
  const f = onreadFields(socket);
  if (f === null) return undefined;
  const own = socket as unknown as Record<symbol, unknown>;
  let released = false;
  own[f.buffer] = SHARED;
  own[f.callback] = (n: number): boolean => {
    const bytes = SHARED.subarray(0, n);
    if (!released) {
      onRead(bytes);
      return true;
    }
    // As Node reads a socket without `onread`: the bytes go to the stream (false: it is full, stop reading).
    return socket.push(Buffer.from(bytes));
  };
  handle.useUserBuffer(SHARED);
  return {
    release() {
      released = true;
    },
  };
}

/** A copy of `bytes` when they are a view of the shared buffer (gone at the next read), else `bytes` itself. */
export function kept(bytes: Buffer): Buffer {
  return bytes.buffer === SHARED.buffer ? Buffer.from(bytes) : bytes;
}

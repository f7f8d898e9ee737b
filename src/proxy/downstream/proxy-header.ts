// A listener that takes the PROXY protocol: every connection must come from a trusted peer and open with a
// whole, well-formed header within the deadline; the header is read off the socket (the bytes after it stay for
// HTTP or TLS), its source becomes the connection's client, and the socket goes on to the listener's own server.
import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';
import { proxiedSourceOf, setProxiedSource } from '../exchange.js';
import { parseProxyHeader } from '../wire/proxy-protocol.js';

export interface ProxyHeaderOptions {
  /** Whether the peer (its address as the socket gives it) may send a header. */
  trusted(address: string | undefined): boolean;
  timeoutMs: number;
  /** A connection closed for its peer or its header; `reason` for the log. */
  refused(reason: string): void;
}

/**
 * Reads the header off `socket`, then hands it on with the bytes that followed the header (`rest`); closes it
 * when its peer or header is refused.
 */
export function readProxyHeader(
  socket: Socket,
  options: ProxyHeaderOptions,
  next: (socket: Socket, rest: Buffer) => void,
): void {
  if (!options.trusted(socket.remoteAddress)) {
    options.refused(`peer ${socket.remoteAddress} may not send a PROXY protocol header`);
    socket.destroy();
    return;
  }
  let seen: Buffer = Buffer.alloc(0);
  const timer = setTimeout(() => refuse('no whole PROXY protocol header in time'), options.timeoutMs);
  const cleanup = (): void => {
    clearTimeout(timer);
    socket.off('data', onData);
    socket.off('close', cleanup);
  };
  const refuse = (reason: string): void => {
    cleanup();
    options.refused(`${socket.remoteAddress}: ${reason}`);
    socket.destroy();
  };
  const onData = (chunk: Buffer): void => {
    seen = seen.length === 0 ? chunk : Buffer.concat([seen, chunk]);
    const header = parseProxyHeader(seen);
    if (header.kind === 'more') return;
    if (header.kind === 'refused') {
      refuse(header.reason);
      return;
    }
    cleanup();
    setProxiedSource(socket, header.source?.address ?? socket.remoteAddress ?? '');
    next(socket, seen.subarray(header.consumed));
  };
  socket.on('data', onData);
  socket.on('close', cleanup);
}

/** For an HTTP server: the bytes after the header go back into the socket, read next as the request's. */
export function unshifted(socket: Socket, rest: Buffer): Socket {
  if (rest.length > 0) socket.unshift(rest);
  return socket;
}

/**
 * For a TLS server: the socket as a stream that yields `rest` first. Node's TLS layer reads a TCP socket's handle
 * itself and never sees bytes already read into JavaScript (a ClientHello that came with the header), so the TLS
 * socket is made over this stream instead, at the cost of a JavaScript hop per chunk on such listeners.
 */
export function carrying(socket: Socket, rest: Buffer): Socket {
  const stream = new Duplex({
    read: () => {
      socket.resume();
    },
    write: (chunk: Buffer, _encoding, done) => {
      socket.write(chunk, done);
    },
    final: (done) => {
      socket.end();
      done();
    },
    destroy: (error, done) => {
      socket.destroy();
      done(error);
    },
  });
  if (rest.length > 0) stream.push(rest);
  socket.on('data', (chunk: Buffer) => {
    if (!stream.push(chunk)) socket.pause();
  });
  socket.on('end', () => stream.push(null));
  socket.on('close', () => stream.destroy());
  socket.on('error', () => stream.destroy());
  const carried = stream as unknown as Socket;
  setProxiedSource(carried, proxiedSourceOf(socket) ?? '');
  return carried;
}

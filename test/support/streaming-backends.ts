// Backends that stream a body for as long as their reader takes it, one h2c and one HTTP/1.1, each recording
// every request it got and whether it was cancelled before its body ended. Each body is its path repeated, so
// a client can tell whether the bytes a stream received are all its own. Query parameters: `bytes=N` ends the
// body after N bytes (else it never ends); `hold=1` sends the response head and then nothing.
import { createServer, type Server } from 'node:http';
import {
  createServer as createH2Server,
  type Http2Server,
  type ServerHttp2Session,
  type ServerHttp2Stream,
} from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { Writable } from 'node:stream';

export interface BackendRequest {
  path: string;
  /** Body bytes handed to the transport. */
  written: number;
  /** The request (stream or connection) went away before the body ended. */
  cancelled: boolean;
  /** The body ended as planned. */
  finished: boolean;
}

export interface StreamingBackend {
  port: number;
  requests: BackendRequest[];
  /** Requests neither finished nor cancelled yet. */
  open(): number;
  close(): Promise<void>;
}

/** The body a request for `path` gets: the path between brackets, repeated (64 KiB at a time). */
export function bodyPattern(path: string): Buffer {
  const unit = Buffer.from(`<${path}>`, 'latin1');
  const times = Math.ceil((64 * 1024) / unit.length);
  return Buffer.concat(Array.from({ length: times }, () => unit));
}

/** `received` is a prefix of `path`'s repeated pattern: no byte of another stream among it. */
export function isOwnBody(path: string, received: Buffer): boolean {
  const unit = Buffer.from(`<${path}>`, 'latin1');
  for (let i = 0; i < received.length; i++) if (received[i] !== unit[i % unit.length]) return false;
  return true;
}

function plan(path: string): { total: number; hold: boolean } {
  const query = new URL(path, 'http://x').searchParams;
  const bytes = query.get('bytes');
  return {
    total: bytes === null ? Number.POSITIVE_INFINITY : Number(bytes),
    hold: query.get('hold') === '1',
  };
}

/** Writes `path`'s pattern into `out` with backpressure until `total` bytes are out or `out` is gone. */
function pump(out: Writable, record: BackendRequest, total: number): void {
  const pattern = bodyPattern(record.path);
  const next = (): void => {
    while (!out.destroyed && !out.writableEnded) {
      const left = total - record.written;
      if (left <= 0) {
        out.end(() => {
          record.finished = true;
        });
        return;
      }
      // Each write continues the pattern where the last one stopped.
      const from = record.written % pattern.length;
      const piece = pattern.subarray(from, from + Math.min(left, pattern.length - from));
      record.written += piece.length;
      if (!out.write(piece)) {
        out.once('drain', next);
        return;
      }
    }
  };
  next();
}

function listening(server: Server | Http2Server): Promise<number> {
  return new Promise((resolve) =>
    server.listen({ host: '127.0.0.1', port: 0 }, () => resolve((server.address() as AddressInfo).port)),
  );
}

function openOf(requests: BackendRequest[]): () => number {
  return () => requests.filter((r) => !r.cancelled && !r.finished).length;
}

export async function startH2cStreamer(): Promise<StreamingBackend> {
  const server = createH2Server();
  const requests: BackendRequest[] = [];
  const sessions = new Set<ServerHttp2Session>();
  server.on('session', (session) => {
    sessions.add(session);
    session.on('error', () => {});
    session.on('close', () => sessions.delete(session));
  });
  server.on('stream', (stream: ServerHttp2Stream, headers) => {
    stream.on('error', () => {});
    const record: BackendRequest = {
      path: String(headers[':path']),
      written: 0,
      cancelled: false,
      finished: false,
    };
    requests.push(record);
    stream.on('close', () => {
      if (!record.finished) record.cancelled = true;
    });
    const { total, hold } = plan(record.path);
    stream.respond({ ':status': 200, 'content-type': 'application/octet-stream' });
    if (!hold) pump(stream, record, total);
  });
  const port = await listening(server);
  return {
    port,
    requests,
    open: openOf(requests),
    close: async () => {
      // Sessions still open (the proxy's pooled ones) must not hold the close.
      for (const session of sessions) session.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export async function startH1Streamer(): Promise<StreamingBackend> {
  const requests: BackendRequest[] = [];
  const server = createServer((req, res) => {
    const record: BackendRequest = { path: req.url ?? '/', written: 0, cancelled: false, finished: false };
    requests.push(record);
    res.on('close', () => {
      if (!record.finished) record.cancelled = true;
    });
    const { total, hold } = plan(record.path);
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    if (hold) res.flushHeaders();
    else pump(res, record, total);
  });
  const port = await listening(server);
  return {
    port,
    requests,
    open: openOf(requests),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

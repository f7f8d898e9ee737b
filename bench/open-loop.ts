// An open-loop load generator at a fixed rate over raw keep-alive sockets. It costs a few microseconds per
// request (node:http's client costs ~60), so at 1,000 req/s its own scheduling hardly colours the tail.
// Latency counts from the moment the request is written: the schedule never waits for responses, so a
// stalled server still receives its requests on time and their wait is measured; only the generator's own
// timer lateness is left out, and it is reported (lagP99Ms) so a late generator shows.
// It allocates next to nothing per request (samples go to typed arrays, responses are framed on their bytes):
// a garbage collection in the generator stalls whichever request is in flight, and a proxied request, being
// longer, would be hit more often than a direct one.
import { connect, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { type LoadResult, percentile, summarize } from './load.js';

export interface OpenLoopResult extends LoadResult {
  /** p99 of how late requests were written against their schedule. */
  lagP99Ms: number;
  /** Every measured latency, sorted (for percentiles over several runs). */
  latencies: number[];
}

interface Connection {
  socket: Socket;
  /** When the request in flight was written. */
  sentAt: number;
  /** Response bytes received so far for the request in flight, when they came in several reads. */
  received: Buffer | undefined;
  busy: boolean;
}

const CRLFCRLF = Buffer.from('\r\n\r\n');
// The bench's targets spell these in one of two ways; anything else takes the slow path below.
const CONTENT_LENGTH = [Buffer.from('\r\ncontent-length:'), Buffer.from('\r\nContent-Length:')];
const CONNECTION_CLOSE = [Buffer.from('\r\nconnection: close'), Buffer.from('\r\nConnection: close')];
const STATUS_200 = Buffer.from('HTTP/1.1 200');

/** A complete response at the start of the received bytes: its status, and whether the server closes. */
interface Response {
  ok: boolean;
  close: boolean;
}

const OK_KEEP: Response = { ok: true, close: false };
const OK_CLOSE: Response = { ok: true, close: true };
const FAILED: Response = { ok: false, close: true };

function find(data: Buffer, needles: Buffer[], end: number): number {
  for (const needle of needles) {
    const at = data.indexOf(needle);
    if (at >= 0 && at < end) return at + needle.length;
  }
  return -1;
}

/**
 * The response at the start of `data`, undefined while incomplete. One that cannot be framed counts as an
 * error (the bench backend always sends content-length).
 */
function parseResponse(data: Buffer): Response | undefined {
  const headEnd = data.indexOf(CRLFCRLF);
  if (headEnd < 0) return undefined;
  const at = find(data, CONTENT_LENGTH, headEnd);
  let length = 0;
  if (at >= 0) {
    let i = at;
    while (data[i] === 0x20) i++;
    for (; i < headEnd && data[i]! >= 0x30 && data[i]! <= 0x39; i++) length = length * 10 + data[i]! - 0x30;
  } else {
    const match = /\r\ncontent-length:\s*(\d+)/i.exec(data.toString('latin1', 0, headEnd));
    if (match === null) return FAILED;
    length = Number(match[1]);
  }
  if (data.length < headEnd + 4 + length) return undefined;
  if (STATUS_200.compare(data, 0, STATUS_200.length) !== 0) return FAILED;
  // nginx closes a keep-alive connection after its 1,000th request and says so.
  return find(data, CONNECTION_CLOSE, headEnd) >= 0 ? OK_CLOSE : OK_KEEP;
}

/** The bytes of one connection's request in flight: what came so far, and whether an answer is awaited. */
interface AwaitedResponse {
  received: Buffer | undefined;
  busy: boolean;
}

/** Adds `chunk` to what `conn` received: its complete response (the connection free again), else undefined. */
export function takeResponse(conn: AwaitedResponse, chunk: Buffer): Response | undefined {
  const data = conn.received === undefined ? chunk : Buffer.concat([conn.received, chunk]);
  const response = parseResponse(data);
  if (response === undefined) {
    conn.received = data;
    return undefined;
  }
  conn.received = undefined;
  conn.busy = false;
  return response;
}

export async function fixedRateRaw(
  port: number,
  rate: number,
  seconds: number,
  warmupSeconds = 0,
): Promise<OpenLoopResult> {
  const request = Buffer.from(`GET / HTTP/1.1\r\nhost: bench.test\r\n\r\n`, 'latin1');
  const idle: Connection[] = [];
  const all = new Set<Connection>();
  const capacity = Math.round(rate * seconds);
  const latencies = new Float64Array(capacity);
  const lags = new Float64Array(capacity);
  let measured = 0;
  let lagged = 0;
  let errors = 0;
  let outstanding = 0;
  let measuring = false;
  let onDrained: (() => void) | undefined;

  const finish = (conn: Connection, { ok, close }: Response): void => {
    outstanding--;
    if (measuring) {
      if (!ok) errors++;
      else if (measured < capacity) latencies[measured++] = performance.now() - conn.sentAt;
    }
    if (!close) idle.push(conn);
    else {
      all.delete(conn);
      conn.socket.destroy();
    }
    if (outstanding === 0) onDrained?.();
  };

  const open = (): Connection => {
    const socket = connect({ host: '127.0.0.1', port, noDelay: true });
    const conn: Connection = { socket, sentAt: 0, received: undefined, busy: false };
    all.add(conn);
    socket.on('data', (chunk: Buffer) => {
      const response = takeResponse(conn, chunk);
      if (response !== undefined) finish(conn, response);
    });
    const fail = (): void => {
      if (!all.has(conn)) return;
      all.delete(conn);
      const at = idle.indexOf(conn);
      if (at >= 0) idle.splice(at, 1);
      if (conn.busy) {
        conn.busy = false;
        outstanding--;
        if (measuring) errors++;
        if (outstanding === 0) onDrained?.();
      }
    };
    socket.on('error', fail);
    socket.on('close', fail);
    return conn;
  };

  const send = (): void => {
    const conn = idle.pop() ?? open();
    outstanding++;
    conn.busy = true;
    conn.sentAt = performance.now();
    conn.socket.write(request);
  };

  // One timer callback per send, no promise per request; a late timer sends what is due at once.
  const run = (duration: number, measure: boolean): Promise<void> =>
    new Promise<void>((done) => {
      measuring = measure;
      const total = Math.round(rate * duration);
      const interval = 1000 / rate;
      const start = performance.now() + 5;
      let i = 0;
      const tick = (): void => {
        while (i < total) {
          const due = start + i * interval;
          const now = performance.now();
          // No spinning (it would take the CPU the servers need): wait for the next due time.
          if (due > now) {
            setTimeout(tick, due - now);
            return;
          }
          if (measure && lagged < capacity) lags[lagged++] = now - due;
          i++;
          send();
        }
        if (outstanding === 0) done();
        else onDrained = done;
      };
      tick();
    }).then(() => {
      onDrained = undefined;
    });

  if (warmupSeconds > 0) await run(warmupSeconds, false);
  await run(seconds, true);
  for (const conn of all) conn.socket.destroy();
  const sortedLags = Array.from(lags.subarray(0, lagged)).sort((a, b) => a - b);
  const samples = Array.from(latencies.subarray(0, measured));
  return { ...summarize(samples, seconds, errors), lagP99Ms: percentile(sortedLags, 99), latencies: samples };
}

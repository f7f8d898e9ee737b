// An open-loop load generator at a fixed rate over raw keep-alive sockets. It costs a few microseconds per
// request (node:http's client costs ~60), so at 1,000 req/s its own scheduling hardly colours the tail.
// Latency counts from the moment the request is written: the schedule never waits for responses, so a
// stalled server still receives its requests on time and their wait is measured; only the generator's own
// timer lateness is left out, and it is reported (lagP99Ms) so a late generator shows.
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
  /** Response bytes received so far for the request in flight. */
  received: Buffer;
  busy: boolean;
}

const CRLFCRLF = Buffer.from('\r\n\r\n');

/** A complete response at the start of the received bytes: its status, and whether the server closes. */
interface Response {
  ok: boolean;
  close: boolean;
}

/**
 * The response at the start of `data`, undefined while incomplete. One that cannot be framed counts as an
 * error (the bench backend always sends content-length).
 */
function parseResponse(data: Buffer): Response | undefined {
  const headEnd = data.indexOf(CRLFCRLF);
  if (headEnd < 0) return undefined;
  const head = data.toString('latin1', 0, headEnd).toLowerCase();
  const match = /\r\ncontent-length:\s*(\d+)/.exec(head);
  if (match === null) return { ok: false, close: true };
  if (data.length < headEnd + 4 + Number(match[1])) return undefined;
  // nginx closes a keep-alive connection after its 1,000th request and says so.
  return { ok: head.startsWith('http/1.1 200'), close: /\r\nconnection:\s*close/.test(head) };
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
  const latencies: number[] = [];
  const lags: number[] = [];
  let errors = 0;
  let outstanding = 0;
  let measuring = false;
  let onDrained: (() => void) | undefined;

  const finish = (conn: Connection, { ok, close }: Response): void => {
    outstanding--;
    if (ok && measuring) latencies.push(performance.now() - conn.sentAt);
    if (!ok && measuring) errors++;
    if (!close) idle.push(conn);
    else {
      all.delete(conn);
      conn.socket.destroy();
    }
    if (outstanding === 0) onDrained?.();
  };

  const open = (): Connection => {
    const socket = connect({ host: '127.0.0.1', port, noDelay: true });
    const conn: Connection = { socket, sentAt: 0, received: Buffer.alloc(0), busy: false };
    all.add(conn);
    socket.on('data', (chunk: Buffer) => {
      conn.received = conn.received.length === 0 ? chunk : Buffer.concat([conn.received, chunk]);
      const response = parseResponse(conn.received);
      if (response === undefined) return;
      conn.received = Buffer.alloc(0);
      conn.busy = false;
      finish(conn, response);
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

  const run = async (duration: number, measured: boolean): Promise<void> => {
    measuring = measured;
    const total = Math.round(rate * duration);
    const interval = 1000 / rate;
    const start = performance.now() + 5;
    for (let i = 0; i < total; i++) {
      const due = start + i * interval;
      const wait = due - performance.now();
      // No spinning (it would take the CPU the servers need): a late timer sends what is due at once.
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      if (measured) lags.push(performance.now() - due);
      send();
    }
    if (outstanding > 0) await new Promise<void>((r) => (onDrained = r));
    onDrained = undefined;
  };

  if (warmupSeconds > 0) await run(warmupSeconds, false);
  await run(seconds, true);
  for (const conn of all) conn.socket.destroy();
  lags.sort((a, b) => a - b);
  return { ...summarize(latencies, seconds, errors), lagP99Ms: percentile(lags, 99), latencies };
}

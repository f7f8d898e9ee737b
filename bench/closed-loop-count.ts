// A closed loop that sends an exact number of requests over raw keep-alive sockets, each connection sending
// its next request once the last answer is in: for counting what a fixed amount of work costs a server
// (instructions, syscalls), where a timed run's request count would vary with the machine's speed. The
// connections stay open from one run to the next, as wrk's do for its whole run: what a connection's setup
// costs the server is not charged to a few requests each.
import { connect, type Socket } from 'node:net';
import { takeResponse } from './open-loop.js';

interface CountedRun {
  ok: number;
  errors: number;
  seconds: number;
}

export interface CountingClient {
  /** Sends `total` requests; resolves once every answer is in. */
  run(total: number): Promise<CountedRun>;
  close(): void;
}

interface Run {
  left: number;
  ok: number;
  errors: number;
  inFlight: number;
  done: () => void;
}

interface Connection {
  socket: Socket;
  /** A request was sent and its answer is not in. */
  busy: boolean;
  /** Answer bytes so far, when an answer came in several reads. */
  received: Buffer | undefined;
}

/** `connections` keep-alive connections to `port` that send `request` (the whole request's bytes). */
export function countingClient(port: number, connections: number, request: Buffer): CountingClient {
  const idle: Connection[] = [];
  const all = new Set<Connection>();
  let current: Run | undefined;

  const send = (conn: Connection, run: Run): void => {
    run.left--;
    run.inFlight++;
    conn.busy = true;
    conn.socket.write(request);
  };
  /** An answer (or a failure) for `conn`'s request; `conn` undefined: the connection is gone. */
  const answered = (conn: Connection | undefined, ok: boolean): void => {
    const run = current;
    if (run === undefined) return;
    run.inFlight--;
    if (ok) run.ok++;
    else run.errors++;
    if (conn !== undefined && run.left > 0) send(conn, run);
    else if (conn !== undefined) idle.push(conn);
    else if (run.left > 0) send(open(), run);
    if (run.left === 0 && run.inFlight === 0) run.done();
  };
  const onData = (conn: Connection, chunk: Buffer): void => {
    const response = takeResponse(conn, chunk);
    if (response === undefined) return;
    // A server that closes after some requests (nginx after its 1,000th) says so: the connection is replaced.
    if (response.close) {
      forget(conn);
      conn.socket.destroy();
      answered(undefined, response.ok);
    } else answered(conn, response.ok);
  };
  const forget = (conn: Connection): boolean => {
    if (!all.delete(conn)) return false;
    const at = idle.indexOf(conn);
    if (at >= 0) idle.splice(at, 1);
    return true;
  };
  const open = (): Connection => {
    const socket = connect({ host: '127.0.0.1', port, noDelay: true });
    const conn: Connection = { socket, busy: false, received: undefined };
    all.add(conn);
    socket.on('data', (chunk: Buffer) => onData(conn, chunk));
    socket.on('error', () => {});
    socket.on('close', () => {
      if (forget(conn) && conn.busy) answered(undefined, false);
    });
    return conn;
  };
  for (let i = 0; i < connections; i++) idle.push(open());

  return {
    run(total) {
      const started = performance.now();
      return new Promise((resolve) => {
        const run: Run = { left: total, ok: 0, errors: 0, inFlight: 0, done: () => {} };
        run.done = () => {
          current = undefined;
          resolve({ ok: run.ok, errors: run.errors, seconds: (performance.now() - started) / 1000 });
        };
        current = run;
        for (const conn of idle.splice(0)) {
          if (run.left === 0) idle.push(conn);
          else send(conn, run);
        }
        if (total === 0) run.done();
      });
    },
    close() {
      for (const conn of all) conn.socket.destroy();
      all.clear();
    },
  };
}

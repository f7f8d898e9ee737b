// The native relay of this process (native/relay.c, built into dist/native by `npm run build`): loaded once,
// started on first use, its batched events handed to the listener or connection they belong to. It holds Node's
// event loop open only while it has a listener or a connection, as Node's own sockets would.
import { createRequire } from 'node:module';
import type { Logger } from '../../platform/log-line.js';

/** The addon's functions (native/relay.c). Ids are numbers the relay gives; addresses are IP literals. */
interface Binding {
  start(
    onEvents: (numbers: Float64Array, extras: (string | Buffer | undefined)[]) => void,
    timeoutMs: number,
  ): void;
  listen(host: string, port: number, reusePort: boolean, peek: boolean): [number, string, number];
  forward(id: number, host: string, port: number, first?: Buffer): void;
  peek(id: number): void;
  close(id: number): void;
  release(id: number): void;
  closeListener(id: number): void;
  ref(hold: boolean): void;
  /** Stops the thread now (a process about to exit). */
  stop(): void;
}

/** How a connection ended, as the relay counted it. */
export interface NativeEnd {
  clientBytesRead: number;
  clientBytesWritten: number;
  upstreamBytesRead: number;
  /** Which side failed first: a connect to the upstream that failed or timed out is `connect`. */
  failed: 'client' | 'upstream' | 'connect' | undefined;
  /** The failure's errno (0: the peer closed). */
  errno: number;
}

/** What a connection is told, from its acceptance until its end (or its hand-over to Node). */
export interface NativeConnection {
  /** Bytes read before a decision (a listener that peeks): the connection waits for forward, peek or close. */
  peeked(bytes: Buffer): void;
  closed(end: NativeEnd): void;
  /** Handed over: its socket is now Node's, as `fd`. */
  released(fd: number): void;
}

/** What a listener is told. */
export interface NativeListener {
  /** A new connection, waiting for forward, peek (a peeking listener's already is), close or release. */
  accepted(id: number, clientAddress: string, clientPort: number): NativeConnection;
  /** An accept failed (out of descriptors or memory); the listener rests a moment and goes on. */
  acceptFailed(message: string): void;
}

export interface NativeRelay {
  /** Binds `host:port` (an IP literal); `peek`: read a connection's first bytes for the listener to decide. */
  listen(
    host: string,
    port: number,
    options: { reusePort: boolean; peek: boolean },
    listener: NativeListener,
  ): { id: number; address: string; port: number };
  closeListener(id: number): void;
  forward(id: number, host: string, port: number, first?: Buffer): void;
  peek(id: number): void;
  close(id: number): void;
  release(id: number): void;
}

/** An error of the relay's `listen`, shaped as Node's (`code`, and `listen CODE: …` as its message). */
export class NativeListenError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

const FIELDS = 8;
const FAILURES = [undefined, 'client', 'upstream', 'connect'] as const;

let loaded: Binding | Error | undefined;

/** The addon, or why it cannot load (not built, or not a Linux build of it). */
function binding(): Binding | Error {
  if (loaded !== undefined) return loaded;
  try {
    const require = createRequire(import.meta.url);
    // The same path from src/proxy/layer4 (tests) and dist/proxy/layer4 (the build, the image).
    loaded = require(new URL('../../../dist/native/portico-relay.node', import.meta.url).pathname) as Binding;
  } catch (error) {
    loaded = error as Error;
  }
  return loaded;
}

/** One event of a batch handed to whom it belongs. */
function dispatch(
  addon: Binding,
  listeners: Map<number, NativeListener>,
  connections: Map<number, NativeConnection>,
  n: Float64Array,
  at: number,
  extra: string | Buffer | undefined,
): void {
  const kind = n[at]!;
  const id = n[at + 1]!;
  if (kind === 1) {
    const listener = listeners.get(n[at + 2]!);
    // A listener closed since: its last accepts are closed too.
    if (listener === undefined) addon.close(id);
    else connections.set(id, listener.accepted(id, extra as string, n[at + 3]!));
  } else if (kind === 2) {
    connections.get(id)?.peeked(extra as Buffer);
  } else if (kind === 3) {
    const c = connections.get(id);
    connections.delete(id);
    c?.closed({
      clientBytesRead: n[at + 3]!,
      clientBytesWritten: n[at + 4]!,
      upstreamBytesRead: n[at + 5]!,
      failed: FAILURES[n[at + 6]!],
      errno: n[at + 7]!,
    });
  } else if (kind === 4) {
    const c = connections.get(id);
    connections.delete(id);
    c?.released(n[at + 3]!);
  } else if (kind === 5) {
    listeners.get(n[at + 2]!)?.acceptFailed(extra as string);
  }
}

function create(addon: Binding, connectTimeoutMs: number, log: Logger): NativeRelay {
  const listeners = new Map<number, NativeListener>();
  const connections = new Map<number, NativeConnection>();
  let held = false;
  const hold = () => {
    const wanted = listeners.size + connections.size > 0;
    if (wanted !== held) {
      held = wanted;
      addon.ref(wanted);
    }
  };
  const onEvents = (n: Float64Array, extras: (string | Buffer | undefined)[]) => {
    for (let i = 0; i < extras.length; i++) {
      const at = i * FIELDS;
      try {
        dispatch(addon, listeners, connections, n, at, extras[i]);
      } catch (error) {
        // One event's failure is that connection's alone: it is closed, and the batch's other events go on.
        const id = n[at + 1]!;
        log.error(
          `layer-4 relay: event ${n[at]} of connection ${id}: ${(error as Error).stack ?? String(error)}`,
        );
        if (id >= 0 && connections.delete(id)) addon.close(id);
      }
    }
    hold();
  };
  addon.start(onEvents, connectTimeoutMs);
  // `process.exit()` tears Node down without the cleanup hook that would stop the thread: stop it first.
  process.once('exit', () => addon.stop());
  return {
    listen(host, port, options, listener) {
      let bound: [number, string, number];
      try {
        bound = addon.listen(host, port, options.reusePort, options.peek);
      } catch (error) {
        const code = (error as { code?: string }).code ?? 'ERELAY';
        throw new NativeListenError(code, `listen ${code}: ${(error as Error).message} ${host}:${port}`);
      }
      const [id, address, boundPort] = bound;
      listeners.set(id, listener);
      hold();
      return { id, address, port: boundPort };
    },
    closeListener(id) {
      if (!listeners.delete(id)) return;
      addon.closeListener(id);
      hold();
    },
    forward: (id, host, port, first) => addon.forward(id, host, port, first),
    peek: (id) => addon.peek(id),
    close: (id) => addon.close(id),
    release: (id) => addon.release(id),
  };
}

let relay: NativeRelay | undefined;

/**
 * The process's native relay, started on first call with the connect timeout and log of the first caller (one
 * proxy per process); an Error when the addon cannot load, for the caller to fall back to Node's sockets and say why.
 */
export function nativeRelay(connectTimeoutMs: number, log: Logger): NativeRelay | Error {
  if (relay !== undefined) return relay;
  const addon = binding();
  if (addon instanceof Error) return addon;
  relay = create(addon, connectTimeoutMs, log);
  return relay;
}

/** Whether the addon loads here (without starting it): what `portico version` reports. */
export function nativeRelayLoads(): true | Error {
  const addon = binding();
  return addon instanceof Error ? addon : true;
}

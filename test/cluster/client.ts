// A minimal HTTPS client for tests: raw requests to the simulator's API with a bearer token.
import { request } from 'node:https';
import type { Cluster } from './harness.js';

/** Parsed JSON for tests to navigate with `?.` (values are really strings, numbers, arrays, ...). */
export type Loose = string & { readonly [key: string]: Loose };

/** A reply body as a plain object, to spread into an update. */
export function asObject(value: Loose | undefined): Record<string, unknown> {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
}

export function asList(value: Loose | undefined): Loose[] {
  return Array.isArray(value) ? (value as Loose[]) : [];
}

export interface ApiReply {
  status: number;
  body: Loose;
}

export interface CallOptions {
  token?: string;
  contentType?: string;
}

export function call(
  cluster: Cluster,
  method: string,
  path: string,
  body?: unknown,
  options: CallOptions = {},
): Promise<ApiReply> {
  const url = new URL(path, cluster.server);
  const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method,
        ca: cluster.caPem,
        headers: {
          authorization: `Bearer ${options.token ?? cluster.adminToken}`,
          accept: 'application/json',
          ...(payload === undefined
            ? {}
            : {
                'content-type': options.contentType ?? 'application/json',
                'content-length': Buffer.byteLength(payload),
              }),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = text;
          try {
            parsed = JSON.parse(text);
          } catch {
            // Not JSON: keep the text.
          }
          resolve({ status: res.statusCode ?? 0, body: parsed as Loose });
        });
        // A stream (watch) cut by the server ends without 'end': settle anyway, or an awaiting test hangs.
        res.on('close', () => {
          if (!res.complete)
            reject(new Error(`${method} ${path}: connection closed before the response ended`));
        });
      },
    );
    req.on('error', reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

export interface WatchStream {
  /** Resolves with the next event (waits up to `timeoutMs`). */
  next(timeoutMs?: number): Promise<{ type: string; object: Loose }>;
  close(): void;
  ended(): boolean;
}

export function watch(cluster: Cluster, path: string, token?: string): Promise<WatchStream> {
  const url = new URL(path, cluster.server);
  return new Promise((resolve, reject) => {
    const queue: { type: string; object: Loose }[] = [];
    const waiters: ((e: { type: string; object: Loose }) => void)[] = [];
    let done = false;
    let buffer = '';
    const req = request(
      url,
      { ca: cluster.caPem, headers: { authorization: `Bearer ${token ?? cluster.adminToken}` } },
      (res) => {
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buffer += chunk;
          let nl = buffer.indexOf('\n');
          while (nl >= 0) {
            const line = buffer.slice(0, nl);
            buffer = buffer.slice(nl + 1);
            if (line.trim() !== '') {
              const event = JSON.parse(line) as { type: string; object: Loose };
              const w = waiters.shift();
              if (w !== undefined) w(event);
              else queue.push(event);
            }
            nl = buffer.indexOf('\n');
          }
        });
        res.on('end', () => {
          done = true;
        });
        resolve({
          next(timeoutMs = 5000) {
            const e = queue.shift();
            if (e !== undefined) return Promise.resolve(e);
            return new Promise((res2, rej2) => {
              const timer = setTimeout(
                () => rej2(new Error(`no watch event within ${timeoutMs} ms`)),
                timeoutMs,
              );
              waiters.push((ev) => {
                clearTimeout(timer);
                res2(ev);
              });
            });
          },
          close: () => req.destroy(),
          ended: () => done,
        });
      },
    );
    req.on('error', (error) => {
      if (!done) reject(error);
    });
    req.end();
  });
}

/** Polls `check` until it returns a value other than undefined, or fails after `timeoutMs`. */
export async function eventually<T>(
  check: () => Promise<T | undefined>,
  what: string,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}${last === undefined ? '' : `: ${String(last)}`}`);
}

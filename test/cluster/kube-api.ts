// A minimal HTTPS client for the cluster's API server: JSON requests and watch streams as the admin (client
// certificate) or with a bearer token, for the harness and the tests.
import { request } from 'node:https';

/** Where the API server is and who the admin is. */
export interface ApiEndpoint {
  server: string;
  caPem: string;
  adminCertPem: string;
  adminKeyPem: string;
}

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
  /** Authenticate with this bearer token instead of the admin certificate. */
  token?: string;
  contentType?: string;
  timeoutMs?: number;
}

function credentials(api: ApiEndpoint, token: string | undefined) {
  return token === undefined
    ? { ca: api.caPem, cert: api.adminCertPem, key: api.adminKeyPem, headers: {} }
    : { ca: api.caPem, headers: { authorization: `Bearer ${token}` } };
}

export function call(
  api: ApiEndpoint,
  method: string,
  path: string,
  body?: unknown,
  options: CallOptions = {},
): Promise<ApiReply> {
  const url = new URL(path, api.server);
  const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  const auth = credentials(api, options.token);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method,
        ca: auth.ca,
        cert: 'cert' in auth ? auth.cert : undefined,
        key: 'key' in auth ? auth.key : undefined,
        timeout: options.timeoutMs ?? 30_000,
        headers: {
          ...auth.headers,
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
        res.on('close', () => {
          if (!res.complete)
            reject(new Error(`${method} ${path}: connection closed before the response ended`));
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: timed out`)));
    req.on('error', reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

export interface WatchEvent {
  type: string;
  object: Loose;
}

export interface WatchStream {
  /** Resolves with the next event (waits up to `timeoutMs`). */
  next(timeoutMs?: number): Promise<WatchEvent>;
  /** Every event as it arrives, instead of next(). */
  onEvent(handler: (event: WatchEvent) => void): void;
  close(): void;
  /** Resolves when the server ends the stream or close() is called. */
  ended: Promise<void>;
}

export function watch(api: ApiEndpoint, path: string, token?: string): Promise<WatchStream> {
  const url = new URL(path, api.server);
  const auth = credentials(api, token);
  return new Promise((resolve, reject) => {
    const queue: WatchEvent[] = [];
    const waiters: ((e: WatchEvent) => void)[] = [];
    let handler: ((e: WatchEvent) => void) | undefined;
    let buffer = '';
    let settled = false;
    let endStream: () => void = () => {};
    const ended = new Promise<void>((r) => {
      endStream = r;
    });
    const deliver = (event: WatchEvent) => {
      if (handler !== undefined) return handler(event);
      const w = waiters.shift();
      if (w !== undefined) w(event);
      else queue.push(event);
    };
    const req = request(
      url,
      {
        ca: auth.ca,
        cert: 'cert' in auth ? auth.cert : undefined,
        key: 'key' in auth ? auth.key : undefined,
        headers: { ...auth.headers, accept: 'application/json' },
      },
      (res) => {
        settled = true;
        if (res.statusCode !== 200) {
          reject(new Error(`watch ${path}: HTTP ${res.statusCode}`));
          res.resume();
          return;
        }
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buffer += chunk;
          let nl = buffer.indexOf('\n');
          while (nl >= 0) {
            const line = buffer.slice(0, nl);
            buffer = buffer.slice(nl + 1);
            if (line.trim() !== '') deliver(JSON.parse(line) as WatchEvent);
            nl = buffer.indexOf('\n');
          }
        });
        res.on('close', endStream);
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
          onEvent(h) {
            handler = h;
            for (const e of queue.splice(0)) h(e);
          },
          close: () => req.destroy(),
          ended,
        });
      },
    );
    req.on('error', (error) => {
      if (!settled) reject(error);
      endStream();
    });
    req.end();
  });
}

/** Polls `check` until it returns a value other than undefined, or fails after `timeoutMs`. */
export async function eventually<T>(
  check: () => Promise<T | undefined>,
  what: string,
  timeoutMs = 15_000,
  intervalMs = 100,
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
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new Error(`timed out waiting for ${what}${last === undefined ? '' : `: ${String(last)}`}`);
}

/** Server-side apply of one object (as `kubectl apply --server-side --force-conflicts`). */
export async function apply(
  api: ApiEndpoint,
  object: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } },
  plural: string,
  fieldManager = 'portico-test',
): Promise<Loose> {
  const base = object.apiVersion.includes('/') ? `/apis/${object.apiVersion}` : `/api/${object.apiVersion}`;
  const ns = object.metadata.namespace === undefined ? '' : `/namespaces/${object.metadata.namespace}`;
  const path = `${base}${ns}/${plural}/${object.metadata.name}?fieldManager=${fieldManager}&force=true`;
  const reply = await call(api, 'PATCH', path, object, { contentType: 'application/apply-patch+yaml' });
  if (reply.status !== 200 && reply.status !== 201) {
    throw new Error(
      `apply ${object.kind} ${object.metadata.name}: ${reply.status} ${JSON.stringify(reply.body)}`,
    );
  }
  return reply.body;
}

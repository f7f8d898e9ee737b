// A small JSON client for the Kubernetes API: plain requests and line-delimited watch streams, authenticated
// from a kubeconfig or the pod's service account.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { KubeConfig } from '@kubernetes/client-node';
import { PorticoError } from '../../platform/errors.js';
import { redact } from '../../platform/redact.js';

export type JsonObject = Record<string, unknown>;

export interface ApiReply {
  status: number;
  body: JsonObject;
}

export interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: JsonObject;
}

export interface WatchHandle {
  /** Resolves when the stream ends (server closed it, error, or stop()). */
  done: Promise<void>;
  stop(): void;
}

export interface ApiClient {
  request(method: string, path: string, body?: unknown, contentType?: string): Promise<ApiReply>;
  watch(path: string, onEvent: (event: WatchEvent) => void): WatchHandle;
  /** The pod's namespace when running in a cluster. */
  namespace?: string;
}

const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** The kubeconfig file, or the in-cluster service account (and the pod's namespace) when it is undefined. */
async function loadKubeConfig(kubeconfig?: string): Promise<{ kc: KubeConfig; namespace?: string }> {
  const kc = new KubeConfig();
  try {
    if (kubeconfig !== undefined) {
      kc.loadFromFile(kubeconfig);
      return { kc };
    }
    kc.loadFromCluster();
    const { readFileSync } = await import('node:fs');
    return { kc, namespace: readFileSync(`${SERVICE_ACCOUNT_DIR}/namespace`, 'utf8').trim() };
  } catch (error) {
    const source = kubeconfig ?? 'the in-cluster service account';
    throw new PorticoError('E_CONFIG', `cannot load ${source}: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

function send(url: URL, opts: RequestOptions, payload: string | undefined): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, opts, resolve);
    req.on('error', reject);
    req.on('timeout', () =>
      req.destroy(new PorticoError('E_KUBERNETES', `request to ${url.pathname} timed out`)),
    );
    req.end(payload);
  });
}

async function readText(res: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** A reply body as an object; a body that is not a JSON object reads as its text in `message`. */
function replyBody(text: string): JsonObject {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null ? (value as JsonObject) : {};
  } catch {
    return { message: text };
  }
}

/** Hands each line of a watch stream to `onEvent` as it arrives, until the stream ends. */
async function readWatchEvents(res: IncomingMessage, onEvent: (event: WatchEvent) => void): Promise<void> {
  let buffer = '';
  for await (const chunk of res) {
    buffer += (chunk as Buffer).toString('utf8');
    let newline = buffer.indexOf('\n');
    while (newline >= 0) {
      const line = buffer.slice(0, newline).trim();
      buffer = buffer.slice(newline + 1);
      if (line !== '') onEvent(JSON.parse(line) as WatchEvent);
      newline = buffer.indexOf('\n');
    }
  }
}

/** A client from `kubeconfig`, or the in-cluster service account when it is undefined. */
export async function createApiClient(kubeconfig?: string): Promise<ApiClient> {
  const { kc, namespace } = await loadKubeConfig(kubeconfig);
  const cluster = kc.getCurrentCluster();
  if (cluster === null) {
    throw new PorticoError('E_CONFIG', `${kubeconfig ?? 'kubeconfig'}: no current cluster`);
  }
  const server = new URL(cluster.server);

  async function options(method: string, path: string, headers: Record<string, string>) {
    const opts: RequestOptions = { method, headers: { accept: 'application/json', ...headers } };
    await kc.applyToHTTPSOptions(opts);
    const url = new URL(path, server);
    return { url, opts };
  }

  return {
    namespace,
    async request(method, path, body, contentType = 'application/json') {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const headers: Record<string, string> =
        payload === undefined
          ? {}
          : { 'content-type': contentType, 'content-length': String(Buffer.byteLength(payload)) };
      const { url, opts } = await options(method, path, headers);
      const res = await send(url, { ...opts, timeout: 30_000 }, payload);
      return { status: res.statusCode ?? 0, body: replyBody(await readText(res)) };
    },
    watch(path, onEvent) {
      let stopped = false;
      let destroy: () => void = () => {};
      const done = (async () => {
        const { url, opts } = await options('GET', path, {});
        const res = await send(url, opts, undefined);
        destroy = () => res.destroy();
        if (stopped) {
          res.destroy();
          return;
        }
        if (res.statusCode !== 200) {
          throw new PorticoError(
            'E_KUBERNETES',
            `watch ${url.pathname}: HTTP ${res.statusCode}: ${await readText(res)}`,
          );
        }
        await readWatchEvents(res, onEvent);
      })();
      return {
        done: done.catch((error: unknown) => {
          if (!stopped) throw error;
        }),
        stop() {
          stopped = true;
          destroy();
        },
      };
    },
  };
}

/** A request the API server answered with an error: its HTTP status and its Status object's reason. */
export class KubernetesApiError extends PorticoError {
  readonly status: number;
  /** The Status object's `reason` (`Forbidden`, `Invalid`, …), when it sent one. */
  readonly reason: string | undefined;

  constructor(status: number, reason: string | undefined, message: string) {
    super('E_KUBERNETES', message);
    this.name = 'KubernetesApiError';
    this.status = status;
    this.reason = reason;
  }
}

/** Throws a KubernetesApiError naming the request unless the reply has one of the `ok` statuses. */
export function expectStatus(reply: ApiReply, what: string, ok: number[] = [200, 201]): JsonObject {
  if (ok.includes(reply.status)) return reply.body;
  // An unexpected reply can be a whole object (a Secret, say): an error message only ever quotes it redacted.
  const message =
    typeof reply.body.message === 'string' ? reply.body.message : JSON.stringify(redact(reply.body));
  const reason =
    reply.body.kind === 'Status' && typeof reply.body.reason === 'string' && reply.body.reason !== ''
      ? reply.body.reason
      : undefined;
  throw new KubernetesApiError(reply.status, reason, `${what}: HTTP ${reply.status}: ${message}`);
}

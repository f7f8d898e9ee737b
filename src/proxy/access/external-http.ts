// External authorization over HTTP (forward-auth): the request's method, path and chosen headers go to an
// authorization service; a 2xx lets the request pass with chosen headers of that answer copied to the upstream
// request, any other answer goes back to the client as the service sent it (its body bounded). The Gateway API
// `HTTPAuthConfig` rules, plus the `x-forwarded-*` lines forward-auth services (Authelia, oauth2-proxy) read.
import { Agent, request as httpRequest, type IncomingMessage } from 'node:http';
import { type ExternalAuthorization, MAX_EXTERNAL_AUTH_DENIAL_BYTES } from '../../ir/external-auth.js';
import type { Endpoint } from '../../ir/fleet-config.js';
import { HOP_BY_HOP } from '../wire/headers.js';
import { type AccessDecision, allowed, type DenialReason, denied } from './access-check.js';
import type { AccessRequest } from './request-view.js';

/** Sent whatever `allowedRequestHeaders` says (Gateway API: Host, Method, Path, Content-Length, Authorization). */
const ALWAYS_SENT = new Set(['host', 'authorization']);

/** Never copied from a 2xx answer to the upstream request: framing, the connection's and the answer's own body's. */
const NEVER_COPIED: ReadonlySet<string> = new Set([
  ...HOP_BY_HOP,
  'host',
  'content-length',
  'content-type',
  'content-encoding',
]);

/** Never passed on from a denial: framing (the proxy frames the body it sends). */
const DENIAL_DROPPED: ReadonlySet<string> = new Set([...HOP_BY_HOP, 'content-length']);

/** The path the service is asked for: the configured prefix, then the client's path and query. */
export function authorizationPath(prefix: string, target: string): string {
  if (prefix === '' || prefix === '/') return target;
  const base = prefix.endsWith('/') ? prefix.slice(0, -1) : prefix;
  return target.startsWith('/') ? base + target : `${base}/${target}`;
}

/** Header lines of the request to the service: the always-sent and allowed ones, the forward-auth lines, the length. */
export function authorizationRequestLines(
  config: Pick<ExternalAuthorization, 'allowedRequestHeaders'>,
  request: AccessRequest,
  bodyLength: number,
): string[] {
  const allowedNames = new Set(config.allowedRequestHeaders);
  const lines: string[] = [];
  const raw = request.headerLines;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    if (name.startsWith(':') || HOP_BY_HOP.has(name) || name === 'content-length') continue;
    if (ALWAYS_SENT.has(name) || allowedNames.has(name)) lines.push(name, raw[i + 1]!);
  }
  if (request.host !== undefined && !lines.includes('host')) lines.push('host', request.host);
  lines.push(
    'x-forwarded-method',
    request.method,
    'x-forwarded-proto',
    request.tls ? 'https' : 'http',
    'x-forwarded-uri',
    request.target,
    'x-forwarded-for',
    request.clientAddress,
  );
  if (request.host !== undefined) lines.push('x-forwarded-host', request.host);
  lines.push('content-length', String(bodyLength));
  return lines;
}

/** The headers of a 2xx answer copied to the upstream request (`allowedResponseHeaders`, else all but framing). */
export function copiedResponseHeaders(
  allowedNames: readonly string[],
  answerLines: readonly string[],
): [string, string][] {
  const only = allowedNames.length === 0 ? undefined : new Set(allowedNames);
  const copied: [string, string][] = [];
  for (let i = 0; i < answerLines.length; i += 2) {
    const name = answerLines[i]!.toLowerCase();
    if (only === undefined ? NEVER_COPIED.has(name) : !only.has(name) || NEVER_COPIED.has(name)) continue;
    copied.push([name, answerLines[i + 1]!]);
  }
  return copied;
}

/** The denial's lines as passed to the client: the service's, framing dropped. */
function denialLines(answerLines: readonly string[]): string[] {
  const lines: string[] = [];
  for (let i = 0; i < answerLines.length; i += 2) {
    const name = answerLines[i]!.toLowerCase();
    if (!DENIAL_DROPPED.has(name)) lines.push(name, answerLines[i + 1]!);
  }
  return lines;
}

/** What a service that cannot answer means for the request: passes (fail-open) or 403 (fail-closed). */
export function unanswered(
  config: Pick<ExternalAuthorization, 'failOpen'>,
  reason: DenialReason,
): AccessDecision {
  if (config.failOpen) return { ...allowed(), failedOpen: reason };
  return denied(reason, 403);
}

/** Asks HTTP authorization services; keeps connections to each endpoint alive between requests. */
export class ExternalHttpAuthorizer {
  // No Nagle delay: a request head and its body must not wait for the service's delayed ACK (40 ms on Linux).
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 64, noDelay: true });

  /** The decision for `request` under `config`, asking the service at `endpoint`; never rejects. */
  check(config: ExternalAuthorization, request: AccessRequest, endpoint: Endpoint): Promise<AccessDecision> {
    const body = config.forwardBodyMaxBytes > 0 ? (request.body ?? Buffer.alloc(0)) : Buffer.alloc(0);
    if (body.length > config.forwardBodyMaxBytes && config.forwardBodyMaxBytes > 0)
      return Promise.resolve(denied('body_too_large', 413));
    return new Promise((resolve) => {
      let settled = false;
      const settle = (decision: AccessDecision): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(decision);
      };
      const outgoing = httpRequest({
        agent: this.agent,
        host: endpoint.address,
        port: endpoint.port,
        method: request.method,
        path: authorizationPath(config.pathPrefix, request.target),
        headers: authorizationRequestLines(config, request, body.length),
        setHost: false,
      });
      const timer = setTimeout(() => {
        outgoing.destroy();
        settle(unanswered(config, 'timeout'));
      }, config.timeoutMs);
      outgoing.on('error', () => settle(unanswered(config, 'error')));
      outgoing.on('response', (answer) => {
        if (answer.statusCode !== undefined && answer.statusCode >= 200 && answer.statusCode < 300) {
          answer.resume();
          settle(allowed({ set: copiedResponseHeaders(config.allowedResponseHeaders, answer.rawHeaders) }));
          return;
        }
        readBounded(answer, MAX_EXTERNAL_AUTH_DENIAL_BYTES, (denialBody) =>
          settle(denied('denied', answer.statusCode ?? 403, denialLines(answer.rawHeaders), denialBody)),
        );
        answer.on('error', () => settle(unanswered(config, 'error')));
      });
      // One write for head and body: an empty body is no second segment.
      if (body.length === 0) outgoing.end();
      else outgoing.end(body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

/** Reads a body up to `limit` bytes (the rest is discarded) and hands it over at its end. */
function readBounded(answer: IncomingMessage, limit: number, done: (body: Buffer) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  answer.on('data', (chunk: Buffer) => {
    if (size >= limit) return;
    const part = chunk.subarray(0, limit - size);
    chunks.push(part);
    size += part.length;
  });
  answer.on('end', () => done(Buffer.concat(chunks, size)));
}

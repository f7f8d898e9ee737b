// The HTTPS API server: authentication, authorization, discovery, resources, watch; Status bodies on errors.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { API_AUDIENCE, type Authenticator, type UserInfo } from './authn.js';
import { discovery } from './discovery.js';
import { handle } from './handlers.js';
import type { Lifecycle } from './lifecycle.js';
import type { JsonObject } from './object.js';
import { openapi } from './openapi.js';
import { type Attributes, allowedNonResource, authorize, forbiddenMessage } from './rbac.js';
import { parseResourcePath } from './request-info.js';
import { ApiError, badRequest, statusBody, unauthorized } from './status.js';
import { toTable, wantsTable } from './table.js';
import { tokenRequest, tokenReview } from './token-api.js';
import type { TokenSigner } from './tokens.js';
import { serveWatch } from './watch.js';

export interface ApiServerOptions {
  host: string;
  port: number;
  certPem: string;
  keyPem: string;
  bookmarkIntervalMs: number;
  minTokenExpirationSeconds: number;
  log: (line: string) => void;
}

export interface ApiServer {
  url: string;
  /** Ends every open watch, as an API server restart or watch timeout would. */
  dropWatches(): void;
  close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function sendJson(res: ServerResponse, code: number, body: JsonObject): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function verbOf(method: string, name: string, watch: boolean): string {
  if (method === 'GET') return watch ? 'watch' : name === '' ? 'list' : 'get';
  if (method === 'POST') return 'create';
  if (method === 'PUT') return 'update';
  if (method === 'PATCH') return 'patch';
  if (method === 'DELETE') return name === '' ? 'deletecollection' : 'delete';
  return method.toLowerCase();
}

export async function startApiServer(
  lifecycle: Lifecycle,
  authenticator: Authenticator,
  signer: TokenSigner,
  options: ApiServerOptions,
): Promise<ApiServer> {
  const open = new Set<ServerResponse>();
  let address = '';

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'https://sim');
    const path = url.pathname.replace(/\/+$/, '') || '/';
    const method = req.method ?? 'GET';
    if (path === '/healthz' || path === '/livez' || path === '/readyz') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
      return;
    }
    const header = req.headers.authorization ?? '';
    const token = header.startsWith('Bearer ') ? header.slice(7).trim() : '';
    const auth = authenticator.authenticate(token, [API_AUDIENCE]);
    if (!auth.ok) throw unauthorized();
    const user: UserInfo = auth.user;
    const body = await readBody(req);
    const document = method === 'GET' ? openapi(path, lifecycle.registry) : undefined;
    const doc =
      document !== undefined
        ? { code: 200, body: document }
        : method === 'GET'
          ? discovery(path, lifecycle.registry, address)
          : undefined;
    if (doc !== undefined) {
      if (!allowedNonResource(user))
        throw new ApiError(403, 'Forbidden', `forbidden: User "${user.username}" cannot get path "${path}"`);
      sendJson(res, doc.code, doc.body);
      return;
    }
    const parsed = parseResourcePath(path, lifecycle.registry);
    if (parsed.kind !== 'resource') {
      throw new ApiError(404, 'NotFound', 'the server could not find the requested resource', {});
    }
    const { info } = parsed;
    const watch =
      method === 'GET' && info.name === '' && ['1', 'true'].includes(url.searchParams.get('watch') ?? '');
    const attributes: Attributes = {
      verb: verbOf(method, info.name, watch),
      group: info.type.group,
      resource: info.type.resource,
      subresource: info.subresource,
      namespace: info.type.resource === 'namespaces' && info.type.group === '' ? info.name : info.namespace,
      name: info.name,
    };
    if (!authorize(lifecycle.store, user, attributes)) {
      throw new ApiError(403, 'Forbidden', forbiddenMessage(user, attributes), {
        name: info.name,
        group: info.type.group,
        kind: info.type.resource,
      });
    }
    if (watch) {
      open.add(res);
      res.on('close', () => open.delete(res));
      const asTable = wantsTable(req.headers.accept);
      serveWatch(lifecycle.store, info, url.searchParams, res, {
        bookmarkIntervalMs: options.bookmarkIntervalMs,
        present: (object) =>
          asTable ? toTable(info.type, object, url.searchParams.get('includeObject')) : object,
      });
      return;
    }
    const contentType = req.headers['content-type'] ?? 'application/json';
    if (info.subresource === 'token' && method === 'POST') {
      const parsedBody = parseJsonBody(body);
      sendJson(
        res,
        201,
        tokenRequest(
          lifecycle,
          signer,
          info.namespace,
          info.name,
          parsedBody,
          options.minTokenExpirationSeconds,
        ),
      );
      return;
    }
    if (info.type.storageKey === 'authentication.k8s.io/tokenreviews' && method === 'POST') {
      sendJson(res, 201, tokenReview(authenticator, parseJsonBody(body)));
      return;
    }
    const answer = handle(lifecycle, { method, info, query: url.searchParams, contentType, body });
    const table = method === 'GET' && info.subresource === '' && wantsTable(req.headers.accept);
    sendJson(
      res,
      answer.code,
      table ? toTable(info.type, answer.body, url.searchParams.get('includeObject')) : answer.body,
    );
  }

  const server: Server = createServer({ cert: options.certPem, key: options.keyPem }, (req, res) => {
    route(req, res).then(
      () => options.log(`${req.method} ${req.url} ${res.statusCode}`),
      (error: unknown) => {
        const apiError =
          error instanceof ApiError
            ? error
            : new ApiError(500, 'InternalError', `internal error: ${(error as Error).message}`);
        if (!(error instanceof ApiError))
          options.log(`internal error on ${req.method} ${req.url}: ${(error as Error).stack}`);
        options.log(`${req.method} ${req.url} ${apiError.code} ${apiError.message}`);
        if (!res.headersSent) sendJson(res, apiError.code, statusBody(apiError));
        else res.end();
      },
    );
  });
  const sockets = new Set<Socket>();
  let closing = false;
  server.on('connection', (socket: Socket) => {
    if (closing) {
      socket.destroy();
      return;
    }
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  address = `${options.host}:${port}`;
  return {
    url: `https://${address}`,
    dropWatches: () => {
      for (const res of open) res.end();
    },
    close: async () => {
      // Stop accepting, then destroy every socket, even one still in its TLS handshake (a reconnecting
      // informer), which closeAllConnections() does not know about yet.
      closing = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const res of open) res.end();
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

function parseJsonBody(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    throw badRequest('the request body is not valid JSON');
  }
}

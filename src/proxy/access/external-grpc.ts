// External authorization over gRPC with Envoy's ext_authz v3 protocol (envoy.service.auth.v3.Authorization/
// Check), so existing authorization servers (OPA-Envoy, Authorino, custom ones) work unchanged. The .proto
// subset lives in proto/envoy/ (written from the Envoy API specification). An OK status lets the request pass
// with the ok_response's header edits; any other status answers the client with the denied_response.
import { fileURLToPath } from 'node:url';
import { Client, credentials, type MethodDefinition, type ServiceDefinition, status } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { type ExternalAuthorization, MAX_EXTERNAL_AUTH_DENIAL_BYTES } from '../../ir/external-auth.js';
import type { Endpoint } from '../../ir/fleet-config.js';
import { HOP_BY_HOP } from '../wire/headers.js';
import { type AccessDecision, allowed, denied, type UpstreamHeaderEdits } from './access-check.js';
import { unanswered } from './external-http.js';
import type { AccessRequest } from './request-view.js';

// src/proxy/access and dist/proxy/access are both three levels below the package root, where proto/ ships.
const PROTO_ROOT = fileURLToPath(new URL('../../../proto/', import.meta.url));
const SERVICE = 'envoy.service.auth.v3.Authorization';

interface HeaderValueOption {
  header?: { key: string; value: string; rawValue?: Buffer };
  append?: { value: boolean } | null;
  /** 0 append or add, 1 add if absent, 2 overwrite or add, 3 overwrite if exists. */
  appendAction: number;
}

/** The CheckResponse fields Portico reads (proto-loader's camelCase names). */
export interface CheckResponse {
  status?: { code: number; message: string } | null;
  deniedResponse?: { status?: { code: number } | null; headers: HeaderValueOption[]; body: string } | null;
  okResponse?: {
    headers: HeaderValueOption[];
    headersToRemove: string[];
    responseHeadersToAdd: HeaderValueOption[];
  } | null;
}

/** The CheckRequest as sent (proto-loader's camelCase names). */
export interface CheckRequest {
  attributes: {
    source: { address: { socketAddress: { address: string; portValue: number } } };
    destination: { address: { socketAddress: { address: string; portValue: number } } };
    request: {
      time: { seconds: number; nanos: number };
      http: {
        id: string;
        method: string;
        headers: Record<string, string>;
        path: string;
        host: string;
        scheme: string;
        query: string;
        size: number;
        protocol: string;
        rawBody: Buffer;
      };
    };
    tlsSession?: { sni: string };
  };
}

type CheckMethod = MethodDefinition<CheckRequest, CheckResponse>;
let loaded: CheckMethod | undefined;

/** The Check method's definition (the .proto loaded once). */
export function checkMethod(): CheckMethod {
  if (loaded === undefined) {
    const definition = loadSync('envoy/service/auth/v3/external_auth.proto', {
      includeDirs: [PROTO_ROOT],
      keepCase: false,
      longs: Number,
      enums: Number,
      defaults: true,
      arrays: true,
      oneofs: true,
    });
    loaded = (definition[SERVICE] as ServiceDefinition).Check as CheckMethod;
  }
  return loaded;
}

/** Never edited by an authorization answer: the connection's, and the routing's. */
const PROTECTED: ReadonlySet<string> = new Set([...HOP_BY_HOP, 'host', 'content-length']);

/** The CheckRequest for `request` (headers: all, or only the allowed ones when a list is given). */
export function checkRequest(
  config: Pick<ExternalAuthorization, 'allowedRequestHeaders' | 'forwardBodyMaxBytes'>,
  request: AccessRequest,
  now: number,
  proxyPort: number,
): CheckRequest {
  const only = config.allowedRequestHeaders.length === 0 ? undefined : new Set(config.allowedRequestHeaders);
  const headers: Record<string, string> = Object.create(null) as Record<string, string>;
  const raw = request.headerLines;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    if (name.startsWith(':') || (only !== undefined && !only.has(name))) continue;
    const existing = headers[name];
    headers[name] = existing === undefined ? raw[i + 1]! : `${existing},${raw[i + 1]!}`;
  }
  const queryAt = request.target.indexOf('?');
  headers[':method'] = request.method;
  headers[':path'] = request.target;
  if (request.host !== undefined) headers[':authority'] = request.host;
  const body = config.forwardBodyMaxBytes > 0 ? (request.body ?? Buffer.alloc(0)) : Buffer.alloc(0);
  return {
    attributes: {
      source: { address: { socketAddress: { address: request.clientAddress, portValue: 0 } } },
      destination: { address: { socketAddress: { address: '0.0.0.0', portValue: proxyPort } } },
      request: {
        time: { seconds: Math.floor(now / 1000), nanos: (now % 1000) * 1_000_000 },
        http: {
          id: '',
          method: request.method,
          headers,
          path: request.target,
          host: request.host ?? '',
          scheme: request.tls ? 'https' : 'http',
          query: queryAt < 0 ? '' : request.target.slice(queryAt + 1),
          size: body.length,
          protocol: 'HTTP/1.1',
          rawBody: body,
        },
      },
      ...(request.serverName === undefined ? {} : { tlsSession: { sni: request.serverName } }),
    },
  };
}

function headerOf(option: HeaderValueOption): [string, string] | undefined {
  const header = option.header;
  if (header === undefined) return undefined;
  const name = header.key.toLowerCase();
  if (name === '' || name.startsWith(':') || PROTECTED.has(name)) return undefined;
  const value = header.value !== '' ? header.value : (header.rawValue?.toString('latin1') ?? '');
  return [name, value];
}

/** The upstream edits of an ok_response (`append` true appends; otherwise a value replaces the name's). */
export function okEdits(ok: NonNullable<CheckResponse['okResponse']>): UpstreamHeaderEdits {
  const edits: UpstreamHeaderEdits = { set: [], append: [], remove: [] };
  for (const option of ok.headers) {
    const header = headerOf(option);
    if (header === undefined) continue;
    if (option.append?.value === true) edits.append.push(header);
    else edits.set.push(header);
  }
  for (const name of ok.headersToRemove) {
    const lower = name.toLowerCase();
    if (!lower.startsWith(':') && !PROTECTED.has(lower)) edits.remove.push(lower);
  }
  return edits;
}

/** The decision a CheckResponse makes. */
export function checkDecision(answer: CheckResponse): AccessDecision {
  if ((answer.status?.code ?? status.OK) === status.OK) {
    const ok = answer.okResponse;
    if (ok === undefined || ok === null) return allowed();
    const responseLines = ok.responseHeadersToAdd.flatMap((o) => headerOf(o) ?? []);
    return allowed(okEdits(ok), responseLines);
  }
  const refusal = answer.deniedResponse;
  if (refusal === undefined || refusal === null) return denied('denied', 403);
  const code = refusal.status?.code ?? 0;
  const lines = refusal.headers.flatMap((o) => headerOf(o) ?? []);
  // Bounded like a forward-auth denial: a service's answer is passed on, not any amount of it.
  const body = Buffer.from(refusal.body).subarray(0, MAX_EXTERNAL_AUTH_DENIAL_BYTES);
  return denied('denied', code >= 200 && code <= 599 ? code : 403, lines, body);
}

/** Asks ext_authz v3 services; one gRPC channel per endpoint, kept between requests. */
export class ExternalGrpcAuthorizer {
  private readonly clients = new Map<string, Client>();

  /** The decision for `request` under `config`, asking the service at `endpoint`; never rejects. */
  check(
    config: ExternalAuthorization,
    request: AccessRequest,
    endpoint: Endpoint,
    proxyPort = 0,
  ): Promise<AccessDecision> {
    if (config.forwardBodyMaxBytes > 0 && (request.body?.length ?? 0) > config.forwardBodyMaxBytes)
      return Promise.resolve(denied('body_too_large', 413));
    const method = checkMethod();
    const message = checkRequest(config, request, Date.now(), proxyPort);
    const deadline = Date.now() + config.timeoutMs;
    return new Promise((resolve) => {
      this.client(endpoint).makeUnaryRequest(
        method.path,
        method.requestSerialize,
        method.responseDeserialize,
        message,
        { deadline },
        (error, answer) => {
          if (error !== null || answer === undefined)
            resolve(unanswered(config, error?.code === status.DEADLINE_EXCEEDED ? 'timeout' : 'error'));
          else resolve(checkDecision(answer));
        },
      );
    });
  }

  private client(endpoint: Endpoint): Client {
    const address = endpoint.address.includes(':') ? `[${endpoint.address}]` : endpoint.address;
    const key = `${address}:${endpoint.port}`;
    let client = this.clients.get(key);
    if (client === undefined) {
      client = new Client(key, credentials.createInsecure());
      this.clients.set(key, client);
    }
    return client;
  }

  close(): void {
    for (const client of this.clients.values()) client.close();
    this.clients.clear();
  }
}

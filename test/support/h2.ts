// HTTP/2 and gRPC test clients on loopback: node:http2 sessions and @grpc/grpc-js calls to the echo service.
import {
  type ClientHttp2Session,
  connect,
  type IncomingHttpHeaders,
  type SecureClientSessionOptions,
} from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import { decodeStrings, ECHO_METHOD, encodeStrings } from '../../src/echo/grpc.js';

export interface H2Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  trailers: IncomingHttpHeaders | undefined;
  /** The stream's RST_STREAM code when it closed (0: none). */
  rstCode: number;
}

export function h2Session(
  url: string,
  options: SecureClientSessionOptions = {},
): Promise<ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const session = connect(url, options);
    session.once('connect', () => resolve(session));
    session.once('error', reject);
  });
}

/** One request on `session`; `path` and `authority` become the pseudo-headers. */
export function h2Request(
  session: ClientHttp2Session,
  path: string,
  options: {
    authority?: string;
    method?: string;
    headers?: Record<string, string | string[]>;
    body?: string;
    /** Sent in a HEADERS frame after the body. */
    trailers?: Record<string, string>;
  } = {},
): Promise<H2Reply> {
  return new Promise((resolve, reject) => {
    const stream = session.request(
      {
        ':path': path,
        ':method': options.method ?? 'GET',
        ':authority': options.authority ?? 'example.com',
        ...options.headers,
      },
      { endStream: options.body === undefined, waitForTrailers: options.trailers !== undefined },
    );
    const sendTrailers = options.trailers;
    if (sendTrailers !== undefined) stream.once('wantTrailers', () => stream.sendTrailers(sendTrailers));
    let status = 0;
    let headers: IncomingHttpHeaders = {};
    let trailers: IncomingHttpHeaders | undefined;
    let body = '';
    stream.on('response', (h) => {
      status = Number(h[':status']);
      headers = h;
    });
    stream.on('trailers', (t) => {
      trailers = t;
    });
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      body += chunk;
    });
    stream.on('error', () => {});
    stream.on('close', () => {
      if (status === 0 && stream.rstCode === 0) reject(new Error(`stream closed without a response`));
      else resolve({ status, headers, body, trailers, rstCode: stream.rstCode ?? 0 });
    });
    if (options.body !== undefined) stream.end(options.body);
  });
}

export interface EchoCall {
  message: string;
  pod: string;
  authority: string;
  path: string;
}

/** A real gRPC client (h2c) for the echo service, with `authority` as :authority. */
export function grpcClient(port: number, authority = 'example.com', address = '127.0.0.1'): grpc.Client {
  return new grpc.Client(`${address}:${port}`, grpc.credentials.createInsecure(), {
    'grpc.default_authority': authority,
  });
}

/** A unary call; rejects with the gRPC error (its `code` is the status). */
export function grpcEcho(
  client: grpc.Client,
  message: string,
  method = ECHO_METHOD,
  deadlineMs = 10_000,
): Promise<EchoCall> {
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest(
      method,
      (m: string) => encodeStrings([m]),
      (bytes: Buffer) => {
        const fields = decodeStrings(bytes);
        return {
          message: fields.get(1) ?? '',
          pod: fields.get(2) ?? '',
          authority: fields.get(3) ?? '',
          path: fields.get(4) ?? '',
        };
      },
      message,
      new grpc.Metadata(),
      { deadline: Date.now() + deadlineMs },
      (error: grpc.ServiceError | null, value?: EchoCall) => {
        if (error !== null) reject(error);
        else resolve(value!);
      },
    );
  });
}

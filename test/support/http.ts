// Test HTTP client and backends on loopback.
import { type Agent, createServer, type IncomingHttpHeaders, request, type Server } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { createEchoServer } from '../../src/echo/server.js';
import type { TestCertificate } from './certs.js';

export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface EchoBody {
  path: string;
  host: string;
  method: string;
  proto: string;
  headers: Record<string, string[]>;
  namespace: string;
  ingress: string;
  service: string;
  pod: string;
}

export function httpRequest(
  port: number,
  path: string,
  options: {
    /** Where to connect (default 127.0.0.1); `host` is the Host header. */
    address?: string;
    host?: string;
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    agent?: false | Agent;
    /** Fail with a reason after this long without a response, instead of reaching the runner's timeout. */
    timeoutMs?: number;
    /** The client's own address (a loopback one other than 127.0.0.1, to be another client). */
    localAddress?: string;
  } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: options.address ?? '127.0.0.1',
        port,
        path,
        method: options.method ?? 'GET',
        headers: { host: options.host ?? 'example.com', ...options.headers },
        agent: options.agent ?? false,
        ...(options.localAddress === undefined ? {} : { localAddress: options.localAddress }),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString(),
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    const { timeoutMs } = options;
    if (timeoutMs !== undefined) {
      req.setTimeout(timeoutMs, () =>
        req.destroy(
          new Error(`no response within ${timeoutMs} ms from port ${port} (${options.host}${path})`),
        ),
      );
    }
    req.end(options.body);
  });
}

export async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
  return (server.address() as AddressInfo).port;
}

export async function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/** An echo backend on a free loopback port; `pod` names it in replies. */
export async function startEcho(pod: string): Promise<{ server: Server; port: number }> {
  const server = createEchoServer({ namespace: 'default', ingress: 'eg', service: 'echo', pod });
  return { server, port: await listen(server) };
}

/** A port with nothing listening: bound then released. */
export async function freePort(): Promise<number> {
  const server = createServer();
  const port = await listen(server);
  await closeServer(server);
  return port;
}

/**
 * Polls `condition` every 10 ms until it holds; after `ms` fails with `state()`, what was seen last (a bound
 * that says why, where the test's own timeout would only say that it ran out).
 */
export async function within(ms: number, condition: () => boolean, state: () => string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${state()}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Polls `condition` every 10 ms until it holds (the test's own timeout bounds the wait). */
export async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 10));
}

/** `promise`'s value, or a failure naming `what` when it has not settled within `ms`. */
export async function settledWithin<T>(ms: number, promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`not settled within ${ms} ms: ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The status code of a GET of `/` over TLS to `address:port` (`servername`, trusting `ca`) presenting `client`'s
 * certificate, or the error that ended it (a refused client certificate ends the handshake).
 */
export function statusWithClientCertificate(
  target: { address: string; port: number; servername: string; ca: string },
  client: TestCertificate,
): Promise<number | Error> {
  return new Promise((resolve) => {
    const req = httpsRequest(
      {
        host: target.address,
        port: target.port,
        path: '/',
        servername: target.servername,
        ca: target.ca,
        cert: client.certificatePem,
        key: client.privateKeyPem,
        agent: false,
        timeout: 10_000,
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', resolve);
    req.end();
  });
}

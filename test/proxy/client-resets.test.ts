// What a client can do to an HTTP/2 connection, against the real `portico proxy` process with one worker (so a
// throw anywhere ends the proxy), its access log and tracing on: a TCP reset with a request open, a download cut
// over TLS, a half-close over TLS, more streams than allowed, and a rapid-reset flood. After each, the request's
// bookkeeping ran (its access log line came), the process is alive and another client is served.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { type ClientHttp2Session, connect as h2Connect } from 'node:http2';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connect as tlsConnect } from 'node:tls';
import { DEFAULT_PROXY_OPTIONS } from '../../src/proxy/options.js';
import { selfSigned } from '../support/certs.js';
import { fleet, forward, listener, route, upstream, vhost } from '../support/fleet.js';
import { h2Request, h2Session } from '../support/h2.js';
import {
  END_HEADERS,
  END_STREAM,
  frame,
  goawayCode,
  HEADERS,
  RST_STREAM,
  rawH2,
  requestBlock,
} from '../support/h2-frames.js';
import { closeServer, freePort, listen, until } from '../support/http.js';
import { type OtlpCollector, startOtlpCollector } from '../support/otlp-collector.js';
import { PORTICO_MAIN } from '../support/portico.js';

const MAX_STREAMS = 128;
/** What one HTTP/2 connection holds upstream at once (the proxy's default). */
const UPSTREAM_SHARE = DEFAULT_PROXY_OPTIONS.http2.maxUpstreamPerSession;

interface LogLine {
  path: string;
  status: number;
  response_flags?: string;
}

describe('proxy process under client resets (HTTP/2, access log and tracing on)', () => {
  let dir: string;
  let proxy: ChildProcess;
  let exitCode: number | null | undefined;
  let stderr = '';
  let stdout = '';
  let plainPort: number;
  let tlsPort: number;
  let backend: Server;
  let collector: OtlpCollector;
  let slowRequests = 0;
  let silentRequests = 0;
  let metricsPort: number;
  const cert = selfSigned('tls.example.com', ['tls.example.com']);

  const logLines = (): LogLine[] =>
    stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as LogLine);

  /** Waits until the access log has a line for `path`: the request's bookkeeping ran to its end. */
  const logged = async (path: string): Promise<LogLine> => {
    await until(() => exitCode !== undefined || logLines().some((l) => l.path === path));
    assert.equal(exitCode, undefined, `the proxy exited (${exitCode}): ${stderr.slice(-2000)}`);
    return logLines().find((l) => l.path === path)!;
  };

  /** The proxy is alive and serves a new client over h2c and TLS. */
  const stillServing = async (): Promise<void> => {
    assert.equal(exitCode, undefined, `the proxy exited (${exitCode}): ${stderr.slice(-2000)}`);
    const plain = await h2Session(`http://127.0.0.1:${plainPort}`);
    const tls = await h2Session(`https://127.0.0.1:${tlsPort}`, {
      servername: 'tls.example.com',
      rejectUnauthorized: false,
    });
    try {
      assert.equal((await h2Request(plain, '/ok', { authority: 'plain.example.com' })).status, 200);
      assert.equal((await h2Request(tls, '/ok', { authority: 'tls.example.com' })).status, 200);
    } finally {
      plain.close();
      tls.close();
    }
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'portico-resets-'));
    // /slow: a head and a little body, then nothing (the request stays open); /big: 50 MB; else a short answer.
    backend = createServer((req, res) => {
      // No answer at all: the request is in flight until its client goes.
      if (req.url?.startsWith('/silent')) {
        silentRequests++;
        return;
      }
      if (req.url?.startsWith('/slow')) {
        slowRequests++;
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('x'.repeat(1024));
        return;
      }
      if (req.url?.startsWith('/big')) {
        res.writeHead(200, { 'content-length': String(50 * 1024 * 1024) });
        const chunk = Buffer.alloc(64 * 1024, 120);
        let left = 50 * 1024 * 1024;
        const pump = (): void => {
          while (left > 0) {
            left -= chunk.length;
            if (!res.write(chunk)) {
              res.once('drain', pump);
              return;
            }
          }
          res.end();
        };
        pump();
        return;
      }
      res.end('ok');
    });
    backend.on('clientError', () => {});
    const backendPort = await listen(backend);
    collector = await startOtlpCollector();
    plainPort = await freePort();
    metricsPort = await freePort();
    tlsPort = await freePort();
    const config = fleet(
      [
        { listener: listener(plainPort), vhosts: [vhost(plainPort, '*', [route(forward(['b']))])] },
        {
          listener: listener(tlsPort, {
            certificates: [{ hostnames: ['tls.example.com'], secrets: ['default/tls'] }],
          }),
          vhosts: [vhost(tlsPort, 'tls.example.com', [route(forward(['b']))])],
        },
      ],
      [upstream('b', [backendPort])],
      [{ name: 'default/tls', ...cert }],
    );
    const file = join(dir, 'fleet.json');
    writeFileSync(file, JSON.stringify(config));
    proxy = spawn(
      process.execPath,
      [
        PORTICO_MAIN,
        'proxy',
        '--config-file',
        file,
        '--workers',
        '1',
        '--bind-address',
        '127.0.0.1',
        '--admin-address',
        'off',
        '--metrics-address',
        `127.0.0.1:${metricsPort}`,
        '--ready-address',
        'off',
        '--drain-seconds',
        '0',
        '--tracing-endpoint',
        collector.endpoint,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    proxy.stdout!.setEncoding('utf8').on('data', (c: string) => {
      stdout += c;
    });
    proxy.stderr!.setEncoding('utf8').on('data', (c: string) => {
      stderr += c;
    });
    proxy.on('exit', (code) => {
      exitCode = code;
    });
    await until(() => exitCode !== undefined || (stderr.match(/listening: /g)?.length ?? 0) >= 2);
    assert.equal(exitCode, undefined, stderr);
  });

  after(async () => {
    if (exitCode === undefined) {
      const exited = new Promise((resolve) => proxy.once('exit', resolve));
      proxy.kill('SIGTERM');
      await exited;
    }
    await closeServer(backend);
    await collector.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A stream open on `session` to `path` whose response head (and some body) has come. */
  const openStream = (session: ClientHttp2Session, path: string, authority: string): Promise<void> =>
    new Promise((resolve, reject) => {
      const stream = session.request({ ':path': path, ':authority': authority });
      stream.on('error', () => {});
      stream.once('response', () => stream.once('data', () => resolve()));
      stream.once('close', () => reject(new Error(`${path} closed before its body came`)));
    });

  it('a TCP reset with a request in flight (h2c)', async () => {
    const session = h2Connect(`http://127.0.0.1:${plainPort}`);
    session.on('error', () => {});
    await openStream(session, '/slow?case=rst', 'plain.example.com');
    (session.socket as Socket).resetAndDestroy();
    const line = await logged('/slow?case=rst');
    assert.equal(line.status, 200);
    assert.equal(line.response_flags, 'client_disconnect');
    await stillServing();
  });

  it('a request its client reset before any answer counts as code 0, not 200', async () => {
    const session = h2Connect(`http://127.0.0.1:${plainPort}`);
    session.on('error', () => {});
    const stream = session.request({ ':path': '/silent?case=code', ':authority': 'plain.example.com' });
    stream.on('error', () => {});
    await until(() => silentRequests >= 1 || exitCode !== undefined);
    (session.socket as Socket).resetAndDestroy();
    const line = await logged('/silent?case=code');
    assert.equal(line.status, 0);
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const counted = metrics.split('\n').filter((l) => l.startsWith('portico_requests_total{'));
    assert.ok(
      counted.some((l) => l.includes('code="0"')),
      `a code="0" series among:\n${counted.join('\n')}`,
    );
    await stillServing();
  });

  it('a download cut mid-body over TLS (as curl -m 1 does)', async () => {
    const session = h2Connect(`https://127.0.0.1:${tlsPort}`, {
      servername: 'tls.example.com',
      rejectUnauthorized: false,
    });
    session.on('error', () => {});
    await openStream(session, '/big?case=cut', 'tls.example.com');
    session.destroy();
    await logged('/big?case=cut');
    await stillServing();
  });

  it('a half-close over TLS with a request open', async () => {
    // Our own TLS socket: a session's socket cannot be ended through the session.
    const socket = tlsConnect({
      host: '127.0.0.1',
      port: tlsPort,
      servername: 'tls.example.com',
      ALPNProtocols: ['h2'],
      rejectUnauthorized: false,
    });
    socket.on('error', () => {});
    const session = h2Connect(`https://127.0.0.1:${tlsPort}`, { createConnection: () => socket });
    session.on('error', () => {});
    await openStream(session, '/slow?case=half', 'tls.example.com');
    socket.end();
    await logged('/slow?case=half');
    session.destroy();
    await stillServing();
  });

  it(`more than ${MAX_STREAMS} concurrent streams on one connection`, async () => {
    const { socket, closed } = await rawH2(plainPort);
    const frames: Buffer[] = [];
    for (let i = 0; i < MAX_STREAMS + 8; i++) {
      const id = 1 + 2 * i;
      frames.push(
        frame(
          HEADERS,
          END_HEADERS | END_STREAM,
          id,
          requestBlock(`/slow?case=streams-${i}`, 'plain.example.com'),
        ),
      );
    }
    socket.write(Buffer.concat(frames));
    // The streams the proxy took are at the backend, as many as one connection's upstream share (the others of
    // the 128 wait for a place); the rest were refused.
    await until(() => slowRequests >= UPSTREAM_SHARE || exitCode !== undefined);
    socket.resetAndDestroy();
    await closed;
    await logged(`/slow?case=streams-${MAX_STREAMS - 1}`);
    await stillServing();
  });

  it('a rapid-reset flood answered with GOAWAY', async () => {
    const { socket, frames, closed } = await rawH2(plainPort);
    const batch: Buffer[] = [];
    // Streams reset by the client as soon as they are sent, past the proxy's bound (400 in 10 s).
    for (let i = 0; i < 600; i++) {
      const id = 1 + 2 * i;
      batch.push(
        frame(
          HEADERS,
          END_HEADERS | END_STREAM,
          id,
          requestBlock(`/slow?case=flood-${i}`, 'plain.example.com'),
        ),
        frame(RST_STREAM, 0, id, Buffer.from([0, 0, 0, 8])),
      );
    }
    socket.write(Buffer.concat(batch));
    await closed;
    assert.notEqual(goawayCode(frames), undefined, 'a GOAWAY before the connection closed');
    await stillServing();
  });

  it('spans of cut requests still reach the collector', async () => {
    await until(
      () =>
        exitCode !== undefined ||
        collector.spans.some((s) => s.attributes.some((a) => a.value.stringValue === '/slow')),
    );
    assert.equal(exitCode, undefined);
  });
});

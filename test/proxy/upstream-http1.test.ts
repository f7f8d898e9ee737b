import assert from 'node:assert/strict';
import { type AddressInfo, createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { EndpointPool, UpstreamExchange } from '../../src/proxy/upstream/http1.js';
import type { UpstreamError, UpstreamSink } from '../../src/proxy/upstream/upstream.js';
import { parseResponseHead } from '../../src/proxy/wire/response-head.js';
import { MALFORMED_CHUNKED, TOO_MANY_TRAILERS } from '../support/malformed-chunked.js';

interface Outcome {
  status: number;
  headers: string[];
  body: string;
  error?: UpstreamError;
}

/** Sends one request through `pool` and collects what the sink sees; `stall`: refuse every body chunk. */
function exchange(pool: EndpointPool, path: string, method = 'GET', stall = false): Promise<Outcome> {
  return new Promise((resolve) => {
    const outcome: Outcome = { status: 0, headers: [], body: '' };
    const sink: UpstreamSink = {
      onUpstreamHead(status, head) {
        outcome.status = status;
        outcome.headers = head.rawHeaders;
      },
      onUpstreamData(chunk) {
        outcome.body += chunk.toString('latin1');
        return !stall;
      },
      onUpstreamEnd(last) {
        if (last !== undefined) outcome.body += last.toString('latin1');
        resolve(outcome);
      },
      onUpstreamError(error) {
        outcome.error = error;
        resolve(outcome);
      },
    };
    const head = `${method} ${path} HTTP/1.1\r\nhost: test\r\n\r\n`;
    pool.send(new UpstreamExchange(head, null, false, method === 'HEAD', sink));
  });
}

// Each path answers with raw bytes, some split into several writes to exercise the incremental parser.
const SCRIPTS: Record<string, string[]> = {
  '/length': ['HTTP/1.1 200 OK\r\ncontent-length: 5\r\nx-a: 1\r\n\r\nhello'],
  '/split': ['HTTP/1.1 200 OK\r\ncontent-le', 'ngth: 6\r\n\r', '\nab', 'cdef'],
  '/chunked': [
    'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n',
    '2;ext=1\r\nde\r\n0\r\nx-t: 1\r\n\r\n',
  ],
  '/chunked-whole': ['HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n'],
  '/interim': [
    'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\n',
    'HTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\nok',
  ],
  '/nocontent': ['HTTP/1.1 204 No Content\r\n\r\n'],
  '/head': ['HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n'],
  '/close': ['HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nuntil ', 'the end', ''],
  '/bad': ['HTTP/1.1 200 OK\r\nbad header\r\n\r\n'],
  '/badchunk': ['HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n'],
  '/chunkspace': ['HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3 \r\nabc\r\n0\r\n\r\n'],
  '/short': ['HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc', ''],
};
// The chunked bodies a client is refused, now from an upstream.
const MALFORMED_BODIES = [...MALFORMED_CHUNKED.map((c) => c.body), TOO_MANY_TRAILERS];
MALFORMED_BODIES.forEach((body, i) => {
  SCRIPTS[`/malformed/${i}`] = [`HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n${body}`];
});

describe('upstream HTTP/1.1 client', () => {
  let server: Server;
  let pool: EndpointPool;
  let connections = 0;

  before(async () => {
    server = createServer((socket: Socket) => {
      connections++;
      let buffered = '';
      socket.on('data', (data: Buffer) => {
        buffered += data.toString('latin1');
        const end = buffered.indexOf('\r\n\r\n');
        if (end === -1) return;
        const path = buffered.split(' ')[1] ?? '';
        buffered = buffered.slice(end + 4);
        // '/who' names the connection it came on (the client's port).
        const who = String(socket.remotePort);
        const parts =
          path === '/who'
            ? [`HTTP/1.1 200 OK\r\ncontent-length: ${who.length}\r\n\r\n${who}`]
            : (SCRIPTS[path] ?? ['HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n']);
        // An empty last part means: close after writing.
        let delay = 0;
        for (const part of parts) {
          setTimeout(() => (part === '' ? socket.end() : socket.write(part, 'latin1')), delay);
          delay += 5;
        }
      });
    });
    await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
    const port = (server.address() as AddressInfo).port;
    pool = new EndpointPool('127.0.0.1', port, `127.0.0.1:${port}`, {
      maxConnections: 2,
      idleTimeoutMs: 4000,
      connectTimeoutMs: 1000,
      sendTimeoutMs: 60_000,
    });
  });

  after(() => {
    pool.destroy();
    server.close();
  });

  it('reads content-length bodies, also when head and body arrive in pieces', async () => {
    assert.deepEqual(await exchange(pool, '/length'), {
      status: 200,
      headers: ['content-length', '5', 'x-a', '1'],
      body: 'hello',
    });
    const split = await exchange(pool, '/split');
    assert.equal(split.status, 200);
    assert.equal(split.body, 'abcdef');
  });

  it('decodes chunked bodies (extensions and trailers dropped)', async () => {
    const reply = await exchange(pool, '/chunked');
    assert.equal(reply.body, 'abcde');
    assert.equal(reply.error, undefined);
  });

  it('skips interim 1xx responses', async () => {
    const reply = await exchange(pool, '/interim');
    assert.equal(reply.status, 201);
    assert.equal(reply.body, 'ok');
  });

  it('knows 204 and HEAD responses have no body', async () => {
    assert.equal((await exchange(pool, '/nocontent')).status, 204);
    const head = await exchange(pool, '/head', 'HEAD');
    assert.equal(head.status, 200);
    assert.equal(head.body, '');
  });

  it('reads a body delimited by the connection closing', async () => {
    assert.equal((await exchange(pool, '/close')).body, 'until the end');
  });

  it('reuses keep-alive connections, at most maxConnections at once', async () => {
    const before = connections;
    await Promise.all([1, 2, 3, 4, 5].map(() => exchange(pool, '/length')));
    assert.ok(connections - before <= 2, `opened ${connections - before} connections`);
  });

  // Newest first would serve every sequential request on one connection and let the idle timeout close the
  // other, which the next burst would then have to reopen.
  it('reuses idle connections oldest first, so those a burst opened stay in use', async () => {
    const two = new EndpointPool(pool.host, pool.port, pool.authority, {
      maxConnections: 2,
      idleTimeoutMs: 4000,
      connectTimeoutMs: 1000,
      sendTimeoutMs: 60_000,
    });
    try {
      const burst = await Promise.all([exchange(two, '/who'), exchange(two, '/who')]);
      assert.notEqual(burst[0]!.body, burst[1]!.body);
      const sequential: string[] = [];
      for (let i = 0; i < 4; i++) sequential.push((await exchange(two, '/who')).body);
      assert.equal(new Set(sequential).size, 2, `connections used: ${sequential.join(', ')}`);
      assert.notEqual(sequential[0], sequential[1]);
    } finally {
      two.destroy();
    }
  });

  // Without the fix the second exchange never completes: the timeout turns that hang into a failure.
  it('reads the next response on a connection whose previous exchange paused reading', {
    timeout: 5000,
  }, async () => {
    const one = new EndpointPool(pool.host, pool.port, pool.authority, {
      maxConnections: 1,
      idleTimeoutMs: 4000,
      connectTimeoutMs: 1000,
      sendTimeoutMs: 60_000,
    });
    try {
      // The whole chunked body arrives in one read: the sink pauses, then the exchange ends.
      assert.equal((await exchange(one, '/chunked-whole', 'GET', true)).body, 'abcde');
      assert.equal((await exchange(one, '/length')).body, 'hello');
    } finally {
      one.destroy();
    }
  });

  it('reports invalid responses and responses cut short', async () => {
    assert.equal((await exchange(pool, '/bad')).error?.kind, 'invalid_response');
    const chunk = await exchange(pool, '/badchunk');
    assert.equal(chunk.status, 200);
    assert.equal(chunk.error?.kind, 'invalid_response');
    // Trailing whitespace in a chunk size is read differently by different parsers: refused.
    assert.equal((await exchange(pool, '/chunkspace')).error?.kind, 'invalid_response');
    const short = await exchange(pool, '/short');
    assert.equal(short.status, 200);
    assert.equal(short.error?.kind, 'reset');
  });

  // Before the one decoder, the upstream side read most of these as well-formed responses.
  it('refuses every chunked body a client is refused (extension bytes, line length, trailers) as invalid_response', {
    timeout: 10_000,
  }, async () => {
    const accepted: string[] = [];
    for (let i = 0; i < MALFORMED_BODIES.length; i++) {
      const reply = await exchange(pool, `/malformed/${i}`);
      assert.equal(reply.status, 200);
      if (reply.error?.kind !== 'invalid_response') accepted.push(MALFORMED_BODIES[i]!.slice(0, 30));
    }
    assert.deepEqual(accepted, []);
  });
});

describe('parseResponseHead', () => {
  it('frames by transfer-encoding over content-length, and never reuses such a connection', () => {
    const head = parseResponseHead(
      'HTTP/1.1 200 OK\r\ncontent-length: 3\r\ntransfer-encoding: chunked',
      false,
    );
    assert.ok(typeof head !== 'string');
    assert.equal(head.bodyLength, -2);
    assert.equal(head.keepAlive, false);
  });

  it('refuses conflicting content-lengths, control characters and obs-fold', () => {
    assert.equal(
      typeof parseResponseHead('HTTP/1.1 200 OK\r\ncontent-length: 1\r\ncontent-length: 2', false),
      'string',
    );
    assert.equal(typeof parseResponseHead('HTTP/1.1 200 OK\r\nx: a\u0001b', false), 'string');
    assert.equal(typeof parseResponseHead('HTTP/1.1 200 OK\r\nx: a\r\n b', false), 'string');
    assert.equal(typeof parseResponseHead('HTTP/2 200 OK', false), 'string');
  });

  it('keeps HTTP/1.0 connections only when asked to', () => {
    const plain = parseResponseHead('HTTP/1.0 200 OK\r\ncontent-length: 0', false);
    const kept = parseResponseHead('HTTP/1.0 200 OK\r\ncontent-length: 0\r\nconnection: keep-alive', false);
    assert.ok(typeof plain !== 'string' && typeof kept !== 'string');
    assert.equal(plain.keepAlive, false);
    assert.equal(kept.keepAlive, true);
  });
});

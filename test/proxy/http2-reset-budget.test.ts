// The stream-reset budget of one client address across its HTTP/2 connections (rapid reset with connection
// churn, CVE-2023-44487): each connection stays under the per-connection bound and is closed by the client, and
// the budget still cuts the source, then closes its new connections at once until the window ends. Streams reset
// in the same read as their HEADERS count (Node destroys them before it emits them) and never reach the backend.
// A client at another address is served throughout.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { constants } from 'node:http2';
import { after, before, describe, it } from 'node:test';
import { createLogger } from '../../src/platform/log-line.js';
import { createProxy, type Proxy as PorticoProxy } from '../../src/proxy/index.js';
import { forward, route, simpleFleet, upstream, vhost } from '../support/fleet.js';
import { h2Request, h2Session } from '../support/h2.js';
import {
  END_HEADERS,
  END_STREAM,
  frame,
  goawayCode,
  HEADERS,
  PING,
  rawH2,
  requestBlock,
  rstStream,
  SETTINGS,
} from '../support/h2-frames.js';
import { closeServer, listen } from '../support/http.js';

const PER_CONNECTION = 50;
const PER_SOURCE = 120;
/** Resets each churned connection sends: under the per-connection bound. */
const RESETS_PER_CONNECTION = 40;
const ATTACKER = '127.0.0.2';

describe('proxy HTTP/2: stream resets budgeted per client address', () => {
  let proxy: PorticoProxy;
  let port: number;
  let backend: Server;
  const backendPaths: string[] = [];
  const logs: string[] = [];

  before(async () => {
    backend = createServer((req, res) => {
      backendPaths.push(req.url ?? '');
      res.end('ok');
    });
    const backendPort = await listen(backend);
    proxy = createProxy({
      bindAddress: '127.0.0.1',
      portMap: () => 0,
      log: createLogger('debug', (line) => logs.push(line)),
      http2: {
        maxStreamResetsPerWindow: PER_CONNECTION,
        maxStreamResetsPerSource: PER_SOURCE,
        streamResetWindowMs: 60_000,
      },
    });
    await proxy.apply(
      simpleFleet(
        [vhost(80, 'example.com', [route(forward(['backend']))])],
        [upstream('backend', [backendPort])],
      ),
    );
    port = proxy.addresses()[0]!.port;
  });

  after(async () => {
    await proxy.close();
    await closeServer(backend);
  });

  async function othersServed(): Promise<void> {
    const other = await h2Session(`http://127.0.0.1:${port}`);
    try {
      assert.equal((await h2Request(other, '/other')).status, 200);
    } finally {
      other.close();
    }
  }

  it('counts streams reset in the read that opened them toward the per-connection bound', async () => {
    const { socket, frames, closed } = await rawH2(port, frame(SETTINGS, 0, 0), undefined, '127.0.0.3');
    const pairs: Buffer[] = [];
    for (let id = 1; id < 2 * 4 * PER_CONNECTION; id += 2) {
      pairs.push(
        frame(HEADERS, END_HEADERS | END_STREAM, id, requestBlock(`/same-read-${id}`, 'example.com')),
      );
      pairs.push(rstStream(id, constants.NGHTTP2_CANCEL));
    }
    socket.write(Buffer.concat(pairs));
    await closed;
    assert.equal(goawayCode(frames), constants.NGHTTP2_ENHANCE_YOUR_CALM);
    await othersServed();
  });

  it('cuts a source that churns connections to stay under the per-connection bound, then refuses its new ones', async () => {
    let cutOn = 0;
    let streamId = 1;
    for (let connection = 1; connection <= 10 && cutOn === 0; connection++) {
      const { socket, frames, closed } = await rawH2(port, frame(SETTINGS, 0, 0), undefined, ATTACKER);
      const pairs: Buffer[] = [];
      for (let i = 0; i < RESETS_PER_CONNECTION; i++, streamId += 2) {
        const id = streamId;
        pairs.push(
          frame(HEADERS, END_HEADERS | END_STREAM, id, requestBlock(`/attack-${id}`, 'example.com')),
        );
        pairs.push(rstStream(id, constants.NGHTTP2_CANCEL));
      }
      // A PING after the pairs: its ACK says the proxy has taken every one of them.
      socket.write(Buffer.concat([...pairs, frame(PING, 0, 0, Buffer.alloc(8))]));
      await Promise.race([
        closed,
        new Promise<void>((resolve) => {
          const check = (): void => {
            if (frames.some((f) => f.type === PING && (f.flags & 1) === 1)) resolve();
            else setTimeout(check, 5);
          };
          check();
        }),
      ]);
      if (goawayCode(frames) === constants.NGHTTP2_ENHANCE_YOUR_CALM) cutOn = connection;
      socket.destroy();
      await closed;
      await othersServed();
    }
    // 40 + 40 + 40 is the budget of 120; the 121st reset, on the fourth connection, cuts it.
    assert.equal(cutOn, 4, 'the fourth connection is cut with ENHANCE_YOUR_CALM');
    assert.ok(logs.some((l) => l.includes(`too many stream resets from ${ATTACKER}`)));

    // Its next connection is closed before a frame is exchanged.
    const { frames, closed } = await rawH2(port, frame(SETTINGS, 0, 0), undefined, ATTACKER);
    await closed;
    assert.equal(frames.length, 0, 'a refused source got a session');
    await othersServed();
    assert.deepEqual(
      backendPaths.filter((p) => p.startsWith('/attack-')),
      [],
      'a stream reset in the read that opened it went upstream',
    );
  });
});

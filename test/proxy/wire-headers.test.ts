// The HTTP/1.1 fast paths pass header lines on as they came, in runs of the head's own text. They must send
// exactly what the line-by-line paths send (the same fields with the same values, in the same order, hop-by-hop
// and untrusted ones left out, the proxy's own added): checked here against them over many random heads.
import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { describe, it } from 'node:test';
import { ClientRequest, clientFacts } from '../../src/proxy/exchange.js';
import { type HeadOptions, requestHeadFromRaw } from '../../src/proxy/upstream/http1-head.js';
import { DROP_FROM_RESPONSE, hopByHopFree } from '../../src/proxy/wire/headers.js';
import { parseRequestHead, RequestHead } from '../../src/proxy/wire/request-head.js';
import { parseResponseHead, ResponseHead } from '../../src/proxy/wire/response-head.js';

/** Names a head may hold, in several spellings: hop-by-hop, forwarding, the proxy's own, framing and plain ones. */
const NAMES = [
  'Connection',
  'connection',
  'Keep-Alive',
  'TE',
  'Trailer',
  'Upgrade',
  'Proxy-Connection',
  'Proxy-Authorization',
  'HTTP2-Settings',
  'Transfer-Encoding',
  'Content-Length',
  'Host',
  'Date',
  'Server',
  'X-Portico-Upstream-Service-Time',
  'x-portico-internal',
  'X-Forwarded-For',
  'X-Forwarded-Host',
  'x-forwarded-proto',
  'Forwarded',
  'X-Request-Id',
  'traceparent',
  'Expect',
  'Content-Type',
  'X-Custom',
  'x-a',
  'Cookie',
  'Set-Cookie',
  'Accept',
  'X',
];
const VALUES = ['', 'a', ' spaced  value ', 'keep-alive', 'close', 'x, y', '\t1\t', 'ø\xff', 'one-id-1'];

/** A deterministic pseudo-random sequence, so a failure repeats. */
function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s / 2147483648;
  };
}

function pick<T>(next: () => number, list: readonly T[]): T {
  return list[Math.floor(next() * list.length)]!;
}

/** Header lines as received in text, each `name: value` with the value's surrounding whitespace trimmed. */
function linesOf(text: string): [string, string][] {
  return text
    .split('\r\n')
    .filter((line) => line !== '')
    .map((line) => {
      const colon = line.indexOf(':');
      return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).replace(/^[ \t]+|[ \t]+$/g, '')];
    });
}

function pairs(flat: string[]): [string, string][] {
  const out: [string, string][] = [];
  for (let i = 0; i < flat.length; i += 2) out.push([flat[i]!.toLowerCase(), flat[i + 1]!]);
  return out;
}

describe('HTTP/1.1 header fast paths', () => {
  it('a response passed through sends what the line-by-line path sends', () => {
    const next = random(7);
    let compared = 0;
    for (let n = 0; n < 3000; n++) {
      const lines: string[] = [];
      const count = Math.floor(next() * 8);
      for (let i = 0; i < count; i++) {
        const name = pick(next, NAMES);
        // A Connection that names a field takes the other path; keep most heads on this one.
        const value = /^connection$/i.test(name)
          ? pick(next, ['keep-alive', 'close', 'Keep-Alive', 'x-a'])
          : pick(next, VALUES);
        lines.push(`${name}:${pick(next, ['', ' ', '  '])}${value}`);
      }
      if (lines.some((l) => /^content-length:/i.test(l))) continue; // framing of its own; not what this compares
      const head = parseResponseHead(['HTTP/1.1 200 OK', ...lines].join('\r\n'), false);
      assert.ok(head instanceof ResponseHead, `${JSON.stringify(lines)}: ${String(head)}`);
      const kept = pairs(hopByHopFree(head.rawHeaders, DROP_FROM_RESPONSE));
      const passed = head.passThrough();
      if (passed === undefined) {
        assert.ok(
          lines.some((l) => /^connection:\s*x-a/i.test(l)),
          JSON.stringify(lines),
        );
        continue;
      }
      assert.deepEqual(linesOf(passed.lines), kept, JSON.stringify(lines));
      assert.equal(
        passed.hasDate,
        kept.some(([name]) => name === 'date'),
      );
      assert.equal(
        passed.hasLength,
        kept.some(([name]) => name === 'content-length'),
      );
      compared++;
    }
    assert.ok(compared > 1000, `only ${compared} heads compared`);
  });

  it('a request forwarded from its head sends what the line-by-line path sends', () => {
    const next = random(11);
    const socket = { remoteAddress: '127.0.0.1' } as Socket;
    let compared = 0;
    for (let n = 0; n < 3000; n++) {
      const lines = ['Host: example.com'];
      const count = Math.floor(next() * 8);
      for (let i = 0; i < count; i++) {
        const name = pick(next, NAMES);
        if (/^(host|content-length|transfer-encoding|expect|upgrade|connection)$/i.test(name)) continue;
        lines.splice(
          Math.floor(next() * (lines.length + 1)),
          0,
          `${name}:${pick(next, ['', ' '])}${pick(next, VALUES)}`,
        );
      }
      const target = pick(next, ['/', '/a?b=1']);
      const parsed = parseRequestHead([`GET ${target} HTTP/1.1`, ...lines].join('\r\n'), {
        maxHeaderSize: 65536,
        maxHeadersCount: 100,
      });
      assert.ok(parsed instanceof RequestHead, `${JSON.stringify(lines)}: ${JSON.stringify(parsed)}`);
      const wire = new ClientRequest('GET', target, parsed, clientFacts(socket), null, false);
      const listed = new ClientRequest(
        'GET',
        target,
        [...parsed.rawHeaders],
        clientFacts(socket),
        null,
        false,
      );
      assert.notEqual(wire.head, undefined);
      assert.equal(listed.head, undefined);
      const options: HeadOptions = {
        method: 'GET',
        target: pick(next, [target, '/rewritten']),
        proto: pick(next, ['http', 'https'] as const),
        timeoutMs: pick(next, [0, 15000]),
        hostRewrite: pick(next, [undefined, 'rewritten.example']),
        chunked: false,
        contentLength: -1,
        authority: '10.0.0.1:8080',
        traceparent: pick(next, [undefined, '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01']),
      };
      const wireHead = requestHeadFromRaw(wire, options);
      const linesHead = requestHeadFromRaw(listed, options);
      const requestLine = (head: string) => head.slice(0, head.indexOf('\r\n'));
      assert.equal(requestLine(wireHead), requestLine(linesHead));
      assert.ok(wireHead.endsWith('\r\n\r\n'));
      const fromWire = linesOf(wireHead.slice(wireHead.indexOf('\r\n') + 2));
      const fromLines = linesOf(linesHead.slice(linesHead.indexOf('\r\n') + 2));
      // x-request-id: the client's own when it sent one acceptable id, else a new one each time.
      const ids = (list: [string, string][]) => list.filter(([name]) => name === 'x-request-id');
      assert.equal(ids(fromWire).length, 1);
      assert.equal(ids(fromLines).length, 1);
      if (ids(fromLines)[0]![1] === 'one-id-1') assert.deepEqual(ids(fromWire), ids(fromLines));
      const rest = (list: [string, string][]) =>
        list
          .filter(([name]) => name !== 'x-request-id')
          .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
      assert.deepEqual(rest(fromWire), rest(fromLines), JSON.stringify({ lines, options }));
      compared++;
    }
    assert.equal(compared, 3000);
  });
});

// The client-side request parser on its own: every framing case, split at every byte, and every kind of
// malformed input refused with the status to answer (never a throw).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RequestParser, type RequestParserSink } from '../../src/proxy/downstream/request-parser.js';
import { CHUNKED_REQUEST, type ParsedRequest } from '../../src/proxy/wire/request-head.js';

const LIMITS = { maxHeaderSize: 1024, maxHeadersCount: 10 };

interface Recorded {
  head: ParsedRequest;
  body: string;
  ended: boolean;
  trailers?: string[] | undefined;
}

/** Feeds `pieces` in order, resuming after each complete request like the connection does. */
function parse(pieces: (string | Buffer)[], limits = LIMITS) {
  const requests: Recorded[] = [];
  const sink: RequestParserSink = {
    onRequestHead: (head) => requests.push({ head, body: '', ended: false }),
    onRequestBody: (chunk) => {
      requests[requests.length - 1]!.body += chunk.toString('latin1');
    },
    onRequestEnd: (trailers) => {
      requests[requests.length - 1]!.ended = true;
      requests[requests.length - 1]!.trailers = trailers;
    },
  };
  const parser = new RequestParser(limits, sink);
  for (const piece of pieces) {
    const chunk = typeof piece === 'string' ? Buffer.from(piece, 'latin1') : piece;
    let offset = 0;
    while (offset < chunk.length) {
      const next = parser.execute(chunk, offset);
      if (next < 0) return { requests, error: parser.error, parser };
      if (next === offset) break;
      offset = next;
    }
  }
  return { requests, error: parser.error, parser };
}

/** The same input cut in two at every byte, and byte by byte: the outcome must not depend on the cuts. */
function everySplit(text: string): ReturnType<typeof parse>[] {
  const outcomes = [parse([text]), parse([...text])];
  for (let i = 1; i < text.length; i++) outcomes.push(parse([text.slice(0, i), text.slice(i)]));
  return outcomes;
}

function refusedWith(text: string, status: number): void {
  for (const outcome of everySplit(text)) {
    assert.equal(outcome.error?.status, status, `${JSON.stringify(text)}: ${JSON.stringify(outcome.error)}`);
  }
}

describe('request parser', () => {
  it('reads a request without a body, split anywhere', () => {
    const text = 'GET /a?b=1 HTTP/1.1\r\nHost: example.com\r\nX-Two:  spaced value \t\r\n\r\n';
    for (const { requests, error } of everySplit(text)) {
      assert.equal(error, undefined);
      assert.equal(requests.length, 1);
      const { head, ended, body } = requests[0]!;
      assert.equal(head.method, 'GET');
      assert.equal(head.target, '/a?b=1');
      assert.equal(head.minor, 1);
      assert.deepEqual(head.rawHeaders, ['Host', 'example.com', 'X-Two', 'spaced value']);
      assert.equal(head.bodyLength, 0);
      assert.equal(head.keepAlive, true);
      assert.equal(head.upgrade, false);
      assert.equal(ended, true);
      assert.equal(body, '');
    }
  });

  it('reads a content-length body, split anywhere', () => {
    const text = 'POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 11\r\n\r\nhello world';
    for (const { requests, error } of everySplit(text)) {
      assert.equal(error, undefined);
      assert.equal(requests[0]!.head.bodyLength, 11);
      assert.equal(requests[0]!.body, 'hello world');
      assert.equal(requests[0]!.ended, true);
    }
  });

  it('reads a chunked body with extensions and trailers, split anywhere', () => {
    const text =
      'POST / HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n' +
      '5;name=value\r\nhello\r\nA \t;bws\r\n, chunked!\r\n0\r\nx-trailer: t\r\nX-Sum:  a b \r\n\r\n';
    for (const { requests, error } of everySplit(text)) {
      assert.equal(error, undefined);
      assert.equal(requests[0]!.head.bodyLength, CHUNKED_REQUEST);
      assert.equal(requests[0]!.body, 'hello, chunked!');
      assert.equal(requests[0]!.ended, true);
      assert.deepEqual(requests[0]!.trailers, ['x-trailer', 't', 'X-Sum', 'a b']);
    }
    // A chunked body without trailer fields reports none.
    const bare = parse([
      'POST / HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n',
    ]);
    assert.equal(bare.requests[0]!.trailers, undefined);
  });

  it('stops after each complete request, so pipelined requests are read one at a time', () => {
    const text =
      'GET /1 HTTP/1.1\r\nhost: x\r\n\r\nPOST /2 HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\nokGET /3 HTTP/1.1\r\nhost: x\r\n\r\n';
    const parser = new RequestParser(LIMITS, {
      onRequestHead: () => {},
      onRequestBody: () => {},
      onRequestEnd: () => {},
    });
    const chunk = Buffer.from(text);
    const first = parser.execute(chunk, 0);
    assert.equal(chunk.toString('latin1', first, first + 7), 'POST /2');
    const second = parser.execute(chunk, first);
    assert.equal(chunk.toString('latin1', second, second + 6), 'GET /3');
    assert.equal(parser.execute(chunk, second), chunk.length);
    for (const { requests } of everySplit(text)) {
      assert.deepEqual(
        requests.map((r) => [r.head.target, r.body, r.ended]),
        [
          ['/1', '', true],
          ['/2', 'ok', true],
          ['/3', '', true],
        ],
      );
    }
  });

  it('tolerates empty lines before a request line', () => {
    const { requests, error } = parse(['\r\n\r\nGET / HTTP/1.1\r\nhost: x\r\n\r\n']);
    assert.equal(error, undefined);
    assert.equal(requests[0]!.head.target, '/');
  });

  it('knows when the connection may be kept: HTTP/1.0 and Connection', () => {
    const keep = (text: string): boolean => parse([text]).requests[0]!.head.keepAlive;
    assert.equal(keep('GET / HTTP/1.0\r\n\r\n'), false);
    assert.equal(keep('GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n'), true);
    assert.equal(keep('GET / HTTP/1.0\r\nconnection: Keep-Alive, foo\r\n\r\n'), true);
    assert.equal(keep('GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n'), false);
    assert.equal(keep('GET / HTTP/1.1\r\nhost: x\r\nconnection: foo, Close\r\n\r\n'), false);
  });

  it('recognises upgrades and stops parsing after their head', () => {
    const text = 'GET /ws HTTP/1.1\r\nhost: x\r\nupgrade: websocket\r\nconnection: Upgrade\r\n\r\nFRAMES';
    const parser = new RequestParser(LIMITS, {
      onRequestHead: (head) => assert.equal(head.upgrade, true),
      onRequestBody: () => assert.fail('tunnel bytes are not a body'),
      onRequestEnd: () => {},
    });
    const chunk = Buffer.from(text);
    const next = parser.execute(chunk, 0);
    assert.equal(chunk.toString('latin1', next), 'FRAMES');
    assert.equal(parser.execute(chunk, next), next);
    const plain = parse(['GET / HTTP/1.1\r\nhost: x\r\nupgrade: websocket\r\n\r\n']).requests[0]!;
    assert.equal(plain.head.upgrade, false, 'an Upgrade header without Connection: upgrade is no upgrade');
  });

  it('reports Expect: 100-continue only for a request with a body', () => {
    const head = (text: string): ParsedRequest => parse([text]).requests[0]!.head;
    assert.equal(
      head('PUT / HTTP/1.1\r\nhost: x\r\nexpect: 100-Continue\r\ncontent-length: 1\r\n\r\n').expectContinue,
      true,
    );
    assert.equal(head('GET / HTTP/1.1\r\nhost: x\r\nexpect: 100-continue\r\n\r\n').expectContinue, false);
  });

  it('accepts a list of identical content-length values', () => {
    const { requests, error } = parse(['POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 2, 2\r\n\r\nok']);
    assert.equal(error, undefined);
    assert.equal(requests[0]!.body, 'ok');
  });

  it('refuses malformed request lines with 400 and unknown versions with 505', () => {
    refusedWith('\x00\x01\x02 nonsense\r\n\r\n', 400);
    refusedWith('GET\r\n\r\n', 400);
    refusedWith('GET /\r\nhost: x\r\n\r\n', 400);
    refusedWith('GET  / HTTP/1.1\r\nhost: x\r\n\r\n', 400);
    refusedWith('GET / HTTP/1.1 \r\nhost: x\r\n\r\n', 400);
    refusedWith('G(T / HTTP/1.1\r\nhost: x\r\n\r\n', 400);
    refusedWith('GET /a\x7fb HTTP/1.1\r\nhost: x\r\n\r\n', 400);
    refusedWith('GET /a\tb HTTP/1.1\r\nhost: x\r\n\r\n', 400);
    refusedWith('GET / HTTX/1.1\r\nhost: x\r\n\r\n', 400);
    refusedWith('GET / HTTP/1.x\r\nhost: x\r\n\r\n', 400);
    refusedWith('GET / HTTP/2.0\r\nhost: x\r\n\r\n', 505);
    refusedWith('GET / HTTP/1.2\r\nhost: x\r\n\r\n', 505);
  });

  it('refuses malformed header lines with 400', () => {
    refusedWith('GET / HTTP/1.1\r\nhost: x\r\nbad header line\r\n\r\n', 400);
    refusedWith('GET / HTTP/1.1\r\nhost: x\r\nbad name: v\r\n\r\n', 400);
    refusedWith('GET / HTTP/1.1\r\nhost: x\r\nname : v\r\n\r\n', 400);
    refusedWith('GET / HTTP/1.1\r\nhost: x\r\n: v\r\n\r\n', 400);
    refusedWith('GET / HTTP/1.1\r\nhost: x\r\nx-folded: a\r\n  b\r\n\r\n', 400);
    refusedWith('GET / HTTP/1.1\r\nhost: x\r\nx-ctl: a\x01b\r\n\r\n', 400);
    refusedWith('GET / HTTP/1.1\r\nhost: x\r\nx-lf: a\nb: c\r\n\r\n', 400);
  });

  it('refuses a missing Host on HTTP/1.1, CONNECT, and unknown expectations', () => {
    refusedWith('GET / HTTP/1.1\r\n\r\n', 400);
    assert.equal(parse(['GET / HTTP/1.0\r\n\r\n']).error, undefined, 'HTTP/1.0 needs no Host');
    refusedWith('CONNECT example.com:443 HTTP/1.1\r\nhost: example.com\r\n\r\n', 405);
    refusedWith('PUT / HTTP/1.1\r\nhost: x\r\nexpect: something\r\n\r\n', 417);
  });

  it('refuses ambiguous body framing with 400 (request smuggling)', () => {
    refusedWith('POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n', 400);
    refusedWith('POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 1, 2\r\n\r\n', 400);
    refusedWith('POST / HTTP/1.1\r\nhost: x\r\ncontent-length: -1\r\n\r\n', 400);
    refusedWith('POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 0x10\r\n\r\n', 400);
    refusedWith('POST / HTTP/1.1\r\nhost: x\r\ncontent-length: \r\n\r\n', 400);
    refusedWith('POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 12345678901234567\r\n\r\n', 400);
    refusedWith('POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 3\r\ntransfer-encoding: chunked\r\n\r\n', 400);
    refusedWith('POST / HTTP/1.1\r\nhost: x\r\ntransfer-encoding: gzip\r\n\r\n', 400);
    refusedWith('POST / HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked, gzip\r\n\r\n', 400);
    refusedWith('POST / HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked, chunked\r\n\r\n', 400);
    refusedWith(
      'POST / HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\ntransfer-encoding: chunked\r\n\r\n',
      400,
    );
  });

  it('refuses malformed chunked bodies with 400', () => {
    const head = 'POST / HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n';
    refusedWith(`${head}zz\r\n`, 400);
    refusedWith(`${head}\r\n`, 400);
    refusedWith(`${head}5 x\r\nhello\r\n0\r\n\r\n`, 400);
    refusedWith(`${head}5\nhello\r\n0\r\n\r\n`, 400);
    refusedWith(`${head}5\r\nhelloXX0\r\n\r\n`, 400);
    refusedWith(`${head}1234567890abc\r\n`, 400);
    refusedWith(`${head}0\r\nbad trailer\r\n\r\n`, 400);
    assert.equal(parse([head, '1'.repeat(5000)]).error?.status, 400);
  });

  it('refuses too many header lines and oversized heads with 431', () => {
    let many = 'GET / HTTP/1.1\r\nhost: x\r\n';
    for (let i = 0; i < 10; i++) many += `x-h${i}: v\r\n`;
    refusedWith(`${many}\r\n`, 431);
    const big = `GET / HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(1100)}\r\n\r\n`;
    assert.equal(parse([big]).error?.status, 431);
    assert.equal(parse([big.slice(0, 600), big.slice(600)]).error?.status, 431);
    // Without the end of the head ever arriving, the limit still holds.
    assert.equal(parse([big.slice(0, 1060)]).error?.status, 431);
    const trailers = `POST / HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n0\r\n${'x-t: v\r\n'.repeat(200)}\r\n`;
    assert.equal(parse([trailers]).error?.status, 431);
  });

  it('never throws on random bytes', () => {
    let seed = 42;
    const random = (): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const alphabet =
      'GET POST / HTTP/1.1\r\n:host x content-length transfer-encoding chunked 0 5 \x00\x7f\xff';
    let refused = 0;
    for (let n = 0; n < 2000; n++) {
      let text = random() < 0.5 ? 'POST / HTTP/1.1\r\nhost: x\r\n' : '';
      const length = Math.floor(random() * 120);
      for (let i = 0; i < length; i++) text += alphabet[Math.floor(random() * alphabet.length)];
      text += '\r\n\r\n';
      const outcome = parse([text.slice(0, 30), text.slice(30)]);
      if (outcome.error !== undefined) {
        refused++;
        assert.ok(
          [400, 405, 414, 417, 431, 501, 505].includes(outcome.error.status),
          JSON.stringify(outcome.error),
        );
      }
    }
    assert.ok(refused > 0);
  });

  it('refuses a second Host and Host values that are not host[:port]', () => {
    refusedWith('GET / HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n', 400);
    refusedWith('GET / HTTP/1.1\r\nHost: a.test/../x y\r\n\r\n', 400);
    refusedWith('GET / HTTP/1.1\r\nHost: a.test/x\r\n\r\n', 400);
    refusedWith('GET / HTTP/1.1\r\nHost: a"b\r\n\r\n', 400);
    refusedWith('GET / HTTP/1.1\r\nHost: a.test:80x\r\n\r\n', 400);
    for (const host of ['a.test', 'a.test:8080', '127.0.0.1:80', '[::1]:80', '', 'xn--bcher-kva.example']) {
      const { requests, error } = parse([`GET / HTTP/1.1\r\nHost: ${host}\r\n\r\n`]);
      assert.equal(error, undefined, host);
      assert.equal(requests.length, 1);
    }
  });

  it('accepts origin-form, OPTIONS *, and absolute-form (turned into origin-form and its Host)', () => {
    refusedWith('GET * HTTP/1.1\r\nhost: x\r\n\r\n', 400);
    refusedWith('GET foo HTTP/1.1\r\nhost: x\r\n\r\n', 400);
    refusedWith('GET /\xff\xfe HTTP/1.1\r\nhost: x\r\n\r\n', 400);
    refusedWith('GET ftp://a.test/ HTTP/1.1\r\nhost: x\r\n\r\n', 400);
    refusedWith('GET http:///p HTTP/1.1\r\nhost: x\r\n\r\n', 400);
    assert.equal(parse(['OPTIONS * HTTP/1.1\r\nhost: x\r\n\r\n']).requests[0]?.head.target, '*');
    const absolute = parse(['GET http://other.test:81/p?q=1 HTTP/1.1\r\nHost: a.test\r\nx: y\r\n\r\n']);
    assert.equal(absolute.requests[0]?.head.target, '/p?q=1');
    assert.deepEqual(absolute.requests[0]?.head.rawHeaders, ['Host', 'other.test:81', 'x', 'y']);
    assert.equal(parse(['GET HTTP://b.test HTTP/1.1\r\nhost: a\r\n\r\n']).requests[0]?.head.target, '/');
    const http10 = parse(['GET http://c.test/x HTTP/1.0\r\n\r\n']).requests[0]?.head;
    assert.deepEqual([http10?.target, http10?.rawHeaders], ['/x', ['Host', 'c.test']]);
  });

  it('answers 501 to transfer-codings before chunked, 400 to transfer-encoding in HTTP/1.0', () => {
    refusedWith('POST / HTTP/1.1\r\nhost: x\r\ntransfer-encoding: gzip, chunked\r\n\r\n', 501);
    refusedWith(
      'POST / HTTP/1.1\r\nhost: x\r\ntransfer-encoding: gzip\r\ntransfer-encoding: chunked\r\n\r\n',
      501,
    );
    refusedWith('POST / HTTP/1.0\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n', 400);
  });

  it('refuses a head with bare-LF line ends at once, and an over-long request line with 414', () => {
    // No blank line ever comes, yet the refusal does not wait for one.
    refusedWith('GET / HTTP/1.1\nHost: a.test\n\n', 400);
    refusedWith('GET / HTTP/1.1\r\nHost: a.test\n', 400);
    const long = `GET /${'a'.repeat(1100)} HTTP/1.1\r\nhost: x\r\n\r\n`;
    assert.equal(parse([long]).error?.status, 414);
    assert.equal(parse([long.slice(0, 1060)]).error?.status, 414);
  });

  it('refuses control bytes in chunk extensions and trailers, trailing whitespace in a chunk size, and too many extension bytes', () => {
    const head = 'POST / HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n';
    refusedWith(`${head}3;a\rb\r\nabc\r\n0\r\n\r\n`, 400);
    // Whitespace is allowed only before an extension (RFC 9112 §7.1.1 BWS), not at the end of the size.
    refusedWith(`${head}3 \r\nabc\r\n0\r\n\r\n`, 400);
    refusedWith(`${head}3\t\r\nabc\r\n0\r\n\r\n`, 400);
    refusedWith(`${head}3\r\nabc\r\n0\r\nx-t: a\x01b\r\n\r\n`, 400);
    const fine = parse([`${head}3 ;a=b\r\nabc\r\n0\r\nx-t: ok\r\n\r\n`]);
    assert.deepEqual([fine.error, fine.requests[0]?.body, fine.requests[0]?.ended], [undefined, 'abc', true]);
    const ext = `;e=${'v'.repeat(1000)}`;
    assert.equal(parse([head, `1${ext}\r\na\r\n`.repeat(20)]).error?.status, 400);
  });
});

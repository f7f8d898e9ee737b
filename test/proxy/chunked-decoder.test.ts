// The one chunked decoder both directions use: bodies split at every byte read the same, and every refusal
// is the same with the client side's limits and with the upstream side's.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ChunkedDecoder, type ChunkedLimits } from '../../src/proxy/wire/chunked-decoder.js';
import type { Refusal } from '../../src/proxy/wire/refusal.js';
import {
  MALFORMED_CHUNKED,
  TOO_MANY_TRAILERS,
  UPSTREAM_TRAILER_FIELDS,
} from '../support/malformed-chunked.js';

/** The request side: trailers bounded by the head limit only; the upstream side: by a 64 KiB head and a count. */
const DIRECTIONS: Record<string, ChunkedLimits> = {
  request: { maxTrailerBytes: 64 * 1024, maxTrailerFields: Number.POSITIVE_INFINITY },
  response: { maxTrailerBytes: 64 * 1024, maxTrailerFields: UPSTREAM_TRAILER_FIELDS },
};

interface Decoded {
  data: string;
  ended: boolean;
  trailers: string[] | undefined;
  error: Refusal | undefined;
  /** What follows the body, left unread. */
  rest: string;
}

function decode(pieces: string[], limits: ChunkedLimits, decoder = new ChunkedDecoder(limits)): Decoded {
  decoder.start();
  const out: Decoded = { data: '', ended: false, trailers: undefined, error: undefined, rest: '' };
  for (const piece of pieces) {
    const chunk = Buffer.from(piece, 'latin1');
    let offset = 0;
    while (offset < chunk.length && !decoder.ended) {
      const next = decoder.read(chunk, offset);
      if (next < 0) return { ...out, error: decoder.error };
      assert.ok(next > offset || decoder.ended, 'read() moves on unless the body ended');
      if (decoder.dataBytes > 0) out.data += chunk.toString('latin1', next - decoder.dataBytes, next);
      offset = next;
    }
    if (decoder.ended) out.rest += chunk.toString('latin1', offset);
  }
  return { ...out, ended: decoder.ended, trailers: decoder.trailers };
}

/** Whole, byte by byte, and cut in two at every byte (at a stride for long inputs, which are slow to cut). */
function everySplit(text: string, limits: ChunkedLimits): Decoded[] {
  const outcomes = [decode([text], limits)];
  if (text.length <= 2000) outcomes.push(decode([...text], limits));
  const stride = text.length <= 2000 ? 1 : 997;
  for (let i = 1; i < text.length; i += stride)
    outcomes.push(decode([text.slice(0, i), text.slice(i)], limits));
  return outcomes;
}

describe('chunked decoder', () => {
  for (const [direction, limits] of Object.entries(DIRECTIONS)) {
    it(`${direction}: reads data, extensions and trailers, split anywhere, and stops at the body's end`, () => {
      const text =
        '5;name=value\r\nhello\r\nA \t;bws\r\n, chunked!\r\n0\r\nx-trailer: t\r\nX-Sum:  a b \r\n\r\nNEXT';
      for (const outcome of everySplit(text, limits)) {
        assert.equal(outcome.error, undefined);
        assert.equal(outcome.data, 'hello, chunked!');
        assert.equal(outcome.ended, true);
        assert.deepEqual(outcome.trailers, ['x-trailer', 't', 'X-Sum', 'a b']);
        assert.equal(outcome.rest, 'NEXT');
      }
    });

    it(`${direction}: reports no trailers for a body without any, and is not ended before its last chunk`, () => {
      for (const outcome of everySplit('2\r\nok\r\n0\r\n\r\n', limits)) {
        assert.deepEqual([outcome.data, outcome.ended, outcome.trailers], ['ok', true, undefined]);
      }
      const cut = decode(['2\r\nok\r\n0\r\nx-t: v\r\n'], limits);
      assert.deepEqual([cut.data, cut.ended, cut.error], ['ok', false, undefined]);
      const large = decode([`1F\r\n${'d'.repeat(31)}\r\n0\r\n\r\n`], limits);
      assert.equal(large.data.length, 31);
    });

    it(`${direction}: refuses every malformed body with the status a client is answered`, () => {
      for (const { reason, body, status } of MALFORMED_CHUNKED) {
        for (const outcome of everySplit(body, limits)) {
          assert.deepEqual(
            outcome.error,
            { status, reason },
            `${reason}: ${JSON.stringify(body.slice(0, 40))}`,
          );
        }
      }
    });

    it(`${direction}: counts chunk extensions per body, so a decoder serves the next body afresh`, () => {
      const decoder = new ChunkedDecoder(limits);
      const half = `1;e=${'v'.repeat(1000)}\r\na\r\n`.repeat(10);
      for (let i = 0; i < 3; i++) assert.equal(decode([`${half}0\r\n\r\n`], limits, decoder).ended, true);
      const refused = decode(['zz\r\n'], limits, decoder);
      assert.equal(refused.error?.reason, 'malformed chunk size');
      assert.deepEqual(decode(['1\r\na\r\n0\r\n\r\n'], limits, decoder).data, 'a');
    });
  }

  it('bounds the trailer fields by count where asked (the upstream side), by bytes alone otherwise', () => {
    const response = decode([TOO_MANY_TRAILERS], DIRECTIONS.response!);
    assert.deepEqual(response.error, { status: 431, reason: 'too many trailers' });
    const request = decode([TOO_MANY_TRAILERS], DIRECTIONS.request!);
    assert.equal(request.trailers?.length, 2 * (UPSTREAM_TRAILER_FIELDS + 1));
    const atLimit = `0\r\n${'x-t: v\r\n'.repeat(UPSTREAM_TRAILER_FIELDS)}\r\n`;
    assert.equal(decode([atLimit], DIRECTIONS.response!).ended, true);
    // The byte bound counts each line with its CRLF: exactly at the limit passes, one byte more does not.
    const small = { maxTrailerBytes: 16, maxTrailerFields: 64 };
    assert.equal(decode(['0\r\nx-a: 123456789\r\n\r\n'], small).ended, true);
    assert.equal(decode(['0\r\nx-a: 1234567890\r\n\r\n'], small).error?.status, 431);
  });
});

// Which trailer fields the proxy relays, and the chunked last chunk that carries them.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { forwardableTrailers, LAST_CHUNK, lastChunk, MAX_TRAILERS } from '../../src/proxy/wire/trailers.js';

describe('trailers', () => {
  it('relays end-to-end fields, lower-cased, and drops framing, routing, auth, connection and forwarding ones', () => {
    const pairs: [string, string][] = [
      ['X-Checksum', 'abc'],
      ['grpc-status', '0'],
      ['Content-Length', '5'],
      ['host', 'evil.example.com'],
      ['authorization', 'Bearer x'],
      ['connection', 'close'],
      ['x-forwarded-for', '203.0.113.9'],
      ['x-forwarded-proto', 'https'],
      ['x-request-id', 'forged'],
      [':status', '200'],
      ['bad name', 'v'],
      ['x-bad-value', 'a\nb'],
    ];
    const lines = pairs.flat();
    assert.deepEqual(forwardableTrailers(lines), ['x-checksum', 'abc', 'grpc-status', '0']);
    assert.equal(forwardableTrailers(['content-type', 'text/plain']), undefined);
  });

  it('relays at most MAX_TRAILERS fields', () => {
    const lines: string[] = [];
    for (let i = 0; i < MAX_TRAILERS + 10; i++) lines.push(`x-${i}`, 'v');
    assert.equal(forwardableTrailers(lines)?.length, 2 * MAX_TRAILERS);
  });

  it('writes the last chunk with the trailer lines, or bare without any', () => {
    assert.equal(lastChunk(['x-a', '1', 'x-b', '2']), '0\r\nx-a: 1\r\nx-b: 2\r\n\r\n');
    assert.equal(lastChunk(undefined), LAST_CHUNK);
    assert.equal(lastChunk([]), '0\r\n\r\n');
  });
});

// Chunked bodies (after the head) that both directions refuse, with the status a client is answered: the
// decoder's own test, and the upstream client's (a response refused as invalid_response), read the same table.

export interface MalformedChunked {
  /** What is wrong, as the decoder's reason says it. */
  reason: string;
  body: string;
  /** 400, or 431 for trailers over the limit. */
  status: number;
}

/** Trailer limits the upstream side has (MAX_TRAILERS fields, a 64 KiB head): the table's trailer cases pass them. */
export const UPSTREAM_TRAILER_FIELDS = 64;

const longExtension = `;e=${'v'.repeat(1000)}`;

export const MALFORMED_CHUNKED: readonly MalformedChunked[] = [
  { reason: 'malformed chunk size', body: 'zz\r\n', status: 400 },
  { reason: 'malformed chunk size', body: '\r\n', status: 400 },
  { reason: 'malformed chunk size', body: '5 x\r\nhello\r\n0\r\n\r\n', status: 400 },
  { reason: 'malformed chunk size', body: '3 \r\nabc\r\n0\r\n\r\n', status: 400 },
  { reason: 'malformed chunk size', body: '3;a\rb\r\nabc\r\n0\r\n\r\n', status: 400 },
  { reason: 'malformed chunk size', body: '1234567890abc\r\n', status: 400 },
  { reason: 'bare LF in chunked body', body: '5\nhello\r\n0\r\n\r\n', status: 400 },
  { reason: 'malformed chunk end', body: '5\r\nhelloXX0\r\n\r\n', status: 400 },
  // Within one line's limit each, over the message's.
  {
    reason: 'too many chunk extensions',
    body: `${`1${longExtension}\r\na\r\n`.repeat(20)}0\r\n\r\n`,
    status: 400,
  },
  // A whole line over the limit, not only one still waiting for its LF.
  { reason: 'chunk line too long', body: `1;${'x'.repeat(5000)}\r\na\r\n0\r\n\r\n`, status: 400 },
  { reason: 'chunk line too long', body: '1'.repeat(5000), status: 400 },
  { reason: 'malformed trailer line', body: '0\r\nbad trailer\r\n\r\n', status: 400 },
  { reason: 'malformed trailer line', body: '0\r\nbad name: v\r\n\r\n', status: 400 },
  { reason: 'malformed trailer line', body: '0\r\nx-t : v\r\n\r\n', status: 400 },
  { reason: 'malformed trailer line', body: '0\r\n: v\r\n\r\n', status: 400 },
  { reason: 'invalid trailer value', body: '0\r\nx-t: a\x01b\r\n\r\n', status: 400 },
  // 20 lines of 4 KB: within the field count, over 64 KiB.
  {
    reason: 'trailers too large',
    body: `0\r\n${`x-t: ${'v'.repeat(4000)}\r\n`.repeat(20)}\r\n`,
    status: 431,
  },
];

/** One more trailer field than the upstream side keeps. */
export const TOO_MANY_TRAILERS = `0\r\n${'x-t: v\r\n'.repeat(UPSTREAM_TRAILER_FIELDS + 1)}\r\n`;

// The bytes of a read that belong to a body of known length, for both HTTP/1.1 parsers (client requests,
// upstream responses): the read itself when it is all body (the common small body, no view made), else a view.

/** At most `remaining` bytes of `chunk` from `offset`, without copying. */
export function bodyPiece(chunk: Buffer, offset: number, remaining: number): Buffer {
  const n = Math.min(remaining, chunk.length - offset);
  return offset === 0 && n === chunk.length ? chunk : chunk.subarray(offset, offset + n);
}

// The HTTP/2 connection preface a prior-knowledge (h2c) client opens with; an HTTP/1.1 request never starts so.
export const H2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

export const PREFACE_YES = 1;
export const PREFACE_NO = 0;
/** The bytes so far agree with the preface but are fewer: wait for more. */
export const PREFACE_MORE = 2;

/** Whether `bytes` (the first of a connection) are the HTTP/2 preface. */
export function matchPreface(bytes: Buffer): number {
  // Almost every HTTP/1.1 request is told apart by its first byte ('P' starts PUT, POST, PATCH and PRI).
  if (bytes.length === 0 || bytes[0] !== 0x50) return PREFACE_NO;
  const n = Math.min(bytes.length, H2_PREFACE.length);
  if (H2_PREFACE.compare(bytes, 0, n, 0, n) !== 0) return PREFACE_NO;
  return n === H2_PREFACE.length ? PREFACE_YES : PREFACE_MORE;
}

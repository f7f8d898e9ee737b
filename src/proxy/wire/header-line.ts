// One header line of an HTTP/1.x head (RFC 9112 §5.1), read on the head's bytes where it stands: the client
// request parser and the upstream response parser walk their header lines with it, each then judging the
// names it cares about. Bytes, not a string: a typed array's bytes are read in a few instructions each, a
// string's characters cost several times that, and most lines need no string at all (they are passed on as
// they came, or only their name is looked at). It fills a record its caller reuses.
import { TOKEN as TOKEN_RULE } from './http-syntax.js';

/** Where the parts of the line last read are in the head's bytes. */
export interface HeaderLine {
  /** Where the name ends: the colon (the name starts where reading began). */
  colon: number;
  /** The value, without the whitespace around it: [valueStart, valueEnd). */
  valueStart: number;
  valueEnd: number;
  /** Where the next line starts (after this line's CRLF, or `end`). */
  next: number;
}

export function headerLine(): HeaderLine {
  return { colon: 0, valueStart: 0, valueEnd: 0, next: 0 };
}

const SP = 32;
const HTAB = 9;
const CR = 13;
const LF = 10;
const COLON = 58;
/**
 * RFC 9110 token bytes (the name): the rule's one table, held in a binding of this module's own. Read through
 * the imported binding in the loops below it cost about 2,200 more instructions per request (13 header lines;
 * bench/proxy-instructions.ts --headers browser): V8 loads an import from its module cell on every read.
 */
const TOKEN = TOKEN_RULE;

/** Field value bytes: visible characters, obs-text, space and tab (no CR, LF, NUL, DEL or other controls). */
export const VALUE = new Uint8Array(256);
VALUE[HTAB] = 1;
for (let c = SP; c < 127; c++) VALUE[c] = 1;
for (let c = 128; c < 256; c++) VALUE[c] = 1;

/**
 * Reads the header line starting at `pos` of a head's `bytes` (the head ends at `end`, without its blank line;
 * its last line may lack the CRLF) into `line`. Returns why the line is malformed, or undefined.
 */
export function readHeaderLine(
  bytes: Uint8Array,
  pos: number,
  end: number,
  line: HeaderLine,
): string | undefined {
  let i = pos;
  // A name must be a token: this also refuses obs-fold continuation lines and whitespace before the colon.
  while (i < end && TOKEN[bytes[i]!] === 1) i++;
  if (i === pos || i === end || bytes[i] !== COLON) return 'malformed header line';
  const colon = i++;
  while (i < end && (bytes[i] === SP || bytes[i] === HTAB)) i++;
  const valueStart = i;
  while (i < end && VALUE[bytes[i]!] === 1) i++;
  const lineEnd = i;
  // Anything but the line's CRLF (or the head's end) here is a control byte, a bare CR or a bare LF.
  if (i < end && (bytes[i] !== CR || i + 1 >= end || bytes[i + 1] !== LF)) return 'invalid header value';
  while (i > valueStart && (bytes[i - 1] === SP || bytes[i - 1] === HTAB)) i--;
  line.colon = colon;
  line.valueStart = valueStart;
  line.valueEnd = i;
  line.next = lineEnd < end ? lineEnd + 2 : end;
  return undefined;
}

/** A string's bytes (latin1): comparing bytes with bytes costs less than reading a string's characters. */
export function latin1Bytes(text: string): Uint8Array {
  return Buffer.from(text, 'latin1');
}

/** Whether bytes [from, to) spell `lower` (lower-case letters, digits, `-`) in any case. */
export function nameIs(bytes: Uint8Array, from: number, to: number, lower: Uint8Array): boolean {
  if (to - from !== lower.length) return false;
  for (let i = 0; i < lower.length; i++) {
    // `| 0x20` lower-cases letters; it maps nothing else onto a lower-case letter, digit or `-` but CR onto `-`.
    const c = bytes[from + i]!;
    if ((c | 0x20) !== lower[i] || c === 13) return false;
  }
  return true;
}

/** Whether bytes [from, to) are `value`'s exactly. */
export function bytesAre(bytes: Uint8Array, from: number, to: number, value: Uint8Array): boolean {
  if (to - from !== value.length) return false;
  for (let i = 0; i < value.length; i++) if (bytes[from + i] !== value[i]) return false;
  return true;
}

/** A content-length value of plain digits read from the bytes, or -2 when it is anything else (read it as text). */
export function digitsValue(bytes: Uint8Array, from: number, to: number): number {
  if (to === from || to - from > 15) return -2;
  let n = 0;
  for (let i = from; i < to; i++) {
    const c = bytes[i]!;
    if (c < 48 || c > 57) return -2;
    n = n * 10 + (c - 48);
  }
  return n;
}

/** Reads up to this long are searched for a head's end as text; longer ones (a body's bytes) as bytes. */
const TEXT_SEARCH_BYTES = 4096;

/** Where a head ends, found by headEnd; reused for every search (searching is synchronous). */
export interface HeadSearch {
  /** Where the blank line that ends the head starts (its CR LF CR LF), or -1 when it is not in the bytes yet. */
  end: number;
  /** When the bytes were searched as text: that text, from the head's first byte to the end of the bytes. */
  text: string | undefined;
}

/**
 * Looks for the end of a head starting at `from` in `bytes`, from `searchFrom` on. A short read is made text
 * once and searched by V8 (the head's text is needed anyway, and a call into Node for the search costs more);
 * a long one is searched as bytes.
 */
export function headEnd(bytes: Buffer, from: number, searchFrom: number, out: HeadSearch): HeadSearch {
  if (bytes.length - from <= TEXT_SEARCH_BYTES) {
    const text = bytes.toString('latin1', from);
    const at = text.indexOf('\r\n\r\n', searchFrom - from);
    out.end = at < 0 ? -1 : from + at;
    out.text = text;
  } else {
    out.end = bytes.indexOf(CRLFCRLF, searchFrom);
    out.text = undefined;
  }
  return out;
}

const CRLFCRLF = Buffer.from('\r\n\r\n');

// Minimal DER (ASN.1 Distinguished Encoding Rules) writer: just the types an X.509 certificate needs.
import { isIPv4, isIPv6 } from 'node:net';

function encodeLength(length: number): Buffer {
  if (length < 0x80) return Buffer.from([length]);
  const bytes: number[] = [];
  for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

/** A tag-length-value element with the given contents. */
export function tlv(tag: number, ...contents: Buffer[]): Buffer {
  const body = Buffer.concat(contents);
  return Buffer.concat([Buffer.from([tag]), encodeLength(body.length), body]);
}

export const sequence = (...items: Buffer[]): Buffer => tlv(0x30, ...items);
export const set = (...items: Buffer[]): Buffer => tlv(0x31, ...items);
export const octetString = (bytes: Buffer): Buffer => tlv(0x04, bytes);
export const utf8String = (text: string): Buffer => tlv(0x0c, Buffer.from(text, 'utf8'));
export const boolean = (value: boolean): Buffer => tlv(0x01, Buffer.from([value ? 0xff : 0x00]));
/** `[n] EXPLICIT`: wraps a whole element. */
export const explicit = (n: number, inner: Buffer): Buffer => tlv(0xa0 | n, inner);

/** A non-negative INTEGER from big-endian magnitude bytes (a leading 0 keeps it positive). */
export function unsignedInteger(magnitude: Buffer): Buffer {
  let start = 0;
  while (start < magnitude.length - 1 && magnitude[start] === 0) start++;
  const trimmed = magnitude.subarray(start);
  const needsPad = (trimmed[0] ?? 0) & 0x80;
  return tlv(0x02, needsPad ? Buffer.concat([Buffer.from([0]), trimmed]) : trimmed);
}

export const smallInteger = (value: number): Buffer => unsignedInteger(Buffer.from([value]));

/** BIT STRING of whole bytes (signatures, keys). */
export const bitStringBytes = (bytes: Buffer): Buffer => tlv(0x03, Buffer.from([0]), bytes);

/** BIT STRING of named bits (bit 0 is the most significant bit of the first byte), trailing zeros cut. */
export function namedBits(bits: number[]): Buffer {
  const highest = Math.max(...bits);
  const bytes = Buffer.alloc(Math.floor(highest / 8) + 1);
  for (const bit of bits) bytes[Math.floor(bit / 8)]! |= 0x80 >> (bit % 8);
  const unused = 7 - (highest % 8);
  return tlv(0x03, Buffer.from([unused]), bytes);
}

export function objectIdentifier(dotted: string): Buffer {
  const arcs = dotted.split('.').map(Number);
  const [first = 0, second = 0, ...rest] = arcs;
  const out: number[] = [first * 40 + second];
  for (const arc of rest) {
    const chunk: number[] = [arc & 0x7f];
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128)) chunk.unshift((v & 0x7f) | 0x80);
    out.push(...chunk);
  }
  return tlv(0x06, Buffer.from(out));
}

/** X.509 time: UTCTime before 2050, GeneralizedTime from then on (RFC 5280 §4.1.2.5). */
export function time(date: Date): Buffer {
  const iso = date.toISOString().replace(/[-:T]/g, '').slice(0, 14);
  return date.getUTCFullYear() < 2050
    ? tlv(0x17, Buffer.from(`${iso.slice(2)}Z`, 'ascii'))
    : tlv(0x18, Buffer.from(`${iso}Z`, 'ascii'));
}

/** A SubjectAltName GeneralName: iPAddress `[7]` for IP literals, else dNSName `[2]`. */
/** A URI GeneralName ([6] IA5String); percent-encoding keeps it ASCII. */
export function uriName(uri: string): Buffer {
  return tlv(0x86, Buffer.from(uri, 'ascii'));
}

export function generalName(san: string): Buffer {
  if (isIPv4(san)) return tlv(0x87, Buffer.from(san.split('.').map(Number)));
  if (isIPv6(san)) return tlv(0x87, ipv6Bytes(san));
  return tlv(0x82, Buffer.from(san, 'ascii'));
}

function ipv6Bytes(address: string): Buffer {
  const [head = '', tail] = address.split('::');
  const groups = (part: string): string[] => (part === '' ? [] : part.split(':'));
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const zeros = new Array<string>(8 - left.length - right.length).fill('0');
  const all = [...left, ...zeros, ...right];
  const out = Buffer.alloc(16);
  for (const [i, group] of all.entries()) out.writeUInt16BE(Number.parseInt(group, 16), i * 2);
  return out;
}

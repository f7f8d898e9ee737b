// Reads the server name (SNI) from the first bytes of a TLS connection, without decrypting anything: the
// ClientHello travels in cleartext (RFC 8446 §4.1.2, RFC 6066 §3). Strict and bounded: any framing the RFCs do
// not allow is refused, and a ClientHello larger than the limit is refused before it is read whole.

/** What the bytes read so far say. */
export type ClientHelloRead =
  | { state: 'incomplete' }
  /** `serverName` lower case; undefined when the client sent no SNI. */
  | { state: 'complete'; serverName: string | undefined }
  | { state: 'invalid'; reason: string };

const RECORD_HEADER = 5;
const CONTENT_HANDSHAKE = 22;
const HANDSHAKE_CLIENT_HELLO = 1;
/** TLS records carry at most 2^14 bytes of plaintext (RFC 8446 §5.1). */
const MAX_RECORD = 16_384;
const EXTENSION_SERVER_NAME = 0;
const NAME_TYPE_HOST = 0;
const INCOMPLETE: ClientHelloRead = { state: 'incomplete' };

function invalid(reason: string): ClientHelloRead {
  return { state: 'invalid', reason };
}

/**
 * The handshake bytes of the leading handshake records in `data`, and whether more records may follow; a
 * ClientHello may span records (RFC 8446 §5.1), never interleaved with another content type.
 */
function handshakeBytes(data: Buffer, maxBytes: number): Buffer | ClientHelloRead {
  const parts: Buffer[] = [];
  let total = 0;
  let at = 0;
  while (at + RECORD_HEADER <= data.length) {
    if (data[at] !== CONTENT_HANDSHAKE) return invalid('not a TLS handshake record');
    if (data[at + 1] !== 3 || data[at + 2]! > 4) return invalid('unknown TLS record version');
    const length = data.readUInt16BE(at + 3);
    if (length === 0 || length > MAX_RECORD) return invalid('TLS record length out of range');
    if (total + length > maxBytes) return invalid(`ClientHello larger than ${maxBytes} bytes`);
    if (at + RECORD_HEADER + length > data.length) {
      parts.push(data.subarray(at + RECORD_HEADER));
      return Buffer.concat(parts);
    }
    parts.push(data.subarray(at + RECORD_HEADER, at + RECORD_HEADER + length));
    total += length;
    at += RECORD_HEADER + length;
  }
  if (at === 0 && data.length > 0 && data[0] !== CONTENT_HANDSHAKE)
    return invalid('not a TLS handshake record');
  return Buffer.concat(parts);
}

/** A cursor over a ClientHello body that refuses to read past its end. */
class Reader {
  at = 0;
  constructor(
    readonly bytes: Buffer,
    readonly end: number,
  ) {}
  left(): number {
    return this.end - this.at;
  }
  take(n: number): Buffer | undefined {
    if (n > this.left()) return undefined;
    const out = this.bytes.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }
  u8(): number | undefined {
    return this.left() < 1 ? undefined : this.bytes[this.at++];
  }
  u16(): number | undefined {
    if (this.left() < 2) return undefined;
    const v = this.bytes.readUInt16BE(this.at);
    this.at += 2;
    return v;
  }
  /** A length-prefixed vector (1 or 2 length bytes). */
  vector(lengthBytes: 1 | 2): Buffer | undefined {
    const n = lengthBytes === 1 ? this.u8() : this.u16();
    return n === undefined ? undefined : this.take(n);
  }
}

/** A DNS name as SNI carries it (RFC 6066: no trailing dot, no IP literal checked here), lower case. */
function hostName(raw: Buffer): string | undefined {
  if (raw.length === 0 || raw.length > 253) return undefined;
  for (const c of raw) {
    const ok =
      (c >= 97 && c <= 122) ||
      (c >= 65 && c <= 90) ||
      (c >= 48 && c <= 57) ||
      c === 45 ||
      c === 46 ||
      c === 95;
    if (!ok) return undefined;
  }
  const name = raw.toString('latin1').toLowerCase();
  if (name.startsWith('.') || name.endsWith('.') || name.includes('..')) return undefined;
  return name;
}

/** The server_name extension's host name (RFC 6066 §3: one name of type host_name). */
function serverNameOf(data: Buffer): string | ClientHelloRead {
  const r = new Reader(data, data.length);
  const list = r.vector(2);
  if (list === undefined || r.left() !== 0 || list.length === 0) return invalid('malformed server_name');
  const names = new Reader(list, list.length);
  let found: string | undefined;
  while (names.left() > 0) {
    const type = names.u8();
    const name = names.vector(2);
    if (type === undefined || name === undefined) return invalid('malformed server_name');
    if (type !== NAME_TYPE_HOST) continue;
    if (found !== undefined) return invalid('two host names in server_name');
    found = hostName(name);
    if (found === undefined) return invalid('server_name is not a DNS name');
  }
  if (found === undefined) return invalid('server_name without a host name');
  return found;
}

function parseBody(body: Buffer): ClientHelloRead {
  const r = new Reader(body, body.length);
  if (r.take(2 + 32) === undefined) return invalid('ClientHello too short');
  const sessionId = r.vector(1);
  if (sessionId === undefined || sessionId.length > 32) return invalid('malformed session id');
  const suites = r.vector(2);
  if (suites === undefined || suites.length < 2 || suites.length % 2 !== 0)
    return invalid('malformed cipher suites');
  const compression = r.vector(1);
  if (compression === undefined || compression.length < 1) return invalid('malformed compression methods');
  // TLS 1.2 and earlier may end here: no extensions, so no SNI.
  if (r.left() === 0) return { state: 'complete', serverName: undefined };
  const extensions = r.vector(2);
  if (extensions === undefined || r.left() !== 0) return invalid('malformed extensions');
  const e = new Reader(extensions, extensions.length);
  const seen = new Set<number>();
  let serverName: string | undefined;
  while (e.left() > 0) {
    const type = e.u16();
    const data = e.vector(2);
    if (type === undefined || data === undefined) return invalid('malformed extension');
    if (seen.has(type)) return invalid(`extension ${type} sent twice`);
    seen.add(type);
    if (type !== EXTENSION_SERVER_NAME) continue;
    const name = serverNameOf(data);
    if (typeof name !== 'string') return name;
    serverName = name;
  }
  return { state: 'complete', serverName };
}

/** Reads what `data` (the connection's first bytes) holds of a ClientHello of at most `maxBytes`. */
export function readClientHello(data: Buffer, maxBytes: number): ClientHelloRead {
  const handshake = handshakeBytes(data, maxBytes);
  if (!Buffer.isBuffer(handshake)) return handshake;
  if (handshake.length < 4) return INCOMPLETE;
  if (handshake[0] !== HANDSHAKE_CLIENT_HELLO) return invalid('first handshake message is not a ClientHello');
  const length = handshake.readUIntBE(1, 3);
  if (length > maxBytes) return invalid(`ClientHello larger than ${maxBytes} bytes`);
  if (handshake.length < 4 + length) return INCOMPLETE;
  return parseBody(handshake.subarray(4, 4 + length));
}

// The PROXY protocol header (HAProxy's proxy-protocol.txt, versions 1 and 2) a load balancer sends before the
// connection's own bytes to say whom it accepted the connection from. Parsed strictly: anything but a whole,
// well-formed header is refused (the connection is closed), never guessed at or passed on as HTTP.

/** v2's 12-byte signature. */
const V2_SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);
/** v1's longest header (`PROXY UNKNOWN` with the longest addresses), CRLF included. */
const V1_MAX = 107;
/** v2 address blocks and TLVs longer than this are refused: a header is an address, not a payload. */
const V2_MAX_LENGTH = 2048;

export type ProxyHeader =
  /** Not all of it is there yet. */
  | { kind: 'more' }
  | { kind: 'refused'; reason: string }
  /**
   * `consumed` bytes were the header; `source` the client it names, undefined for a LOCAL (v2) or UNKNOWN (v1)
   * connection (a health check from the balancer itself: its own address stands).
   */
  | { kind: 'header'; consumed: number; source: { address: string; port: number } | undefined };

const MORE: ProxyHeader = { kind: 'more' };
const refused = (reason: string): ProxyHeader => ({ kind: 'refused', reason });

/** The header at the start of `data` (what arrived so far). */
export function parseProxyHeader(data: Buffer): ProxyHeader {
  if (data.length === 0) return MORE;
  if (data[0] === 0x0d) return parseV2(data);
  if (data[0] === 0x50) return parseV1(data);
  return refused('no PROXY protocol header');
}

function parseV1(data: Buffer): ProxyHeader {
  const prefix = 'PROXY ';
  const head = data.subarray(0, Math.min(data.length, prefix.length)).toString('latin1');
  if (!prefix.startsWith(head)) return refused('no PROXY protocol header');
  const end = data.indexOf('\r\n', 0, 'latin1');
  if (end < 0) return data.length >= V1_MAX ? refused('v1 header longer than 107 bytes') : MORE;
  if (end + 2 > V1_MAX) return refused('v1 header longer than 107 bytes');
  const fields = data.subarray(prefix.length, end).toString('latin1').split(' ');
  if (fields[0] === 'UNKNOWN') return { kind: 'header', consumed: end + 2, source: undefined };
  if (fields.length !== 5) return refused('v1 header must have protocol, two addresses and two ports');
  const [protocol, source, destination, sourcePort, destinationPort] = fields as [
    string,
    string,
    string,
    string,
    string,
  ];
  const family = protocol === 'TCP4' ? 4 : protocol === 'TCP6' ? 6 : 0;
  if (family === 0) return refused(`v1 protocol must be TCP4, TCP6 or UNKNOWN, not '${protocol}'`);
  if (!isAddress(source, family) || !isAddress(destination, family))
    return refused(`v1 addresses must be IPv${family}`);
  const port = v1Port(sourcePort);
  if (port === undefined || v1Port(destinationPort) === undefined)
    return refused('v1 ports must be 0 to 65535 without leading zeros');
  return { kind: 'header', consumed: end + 2, source: { address: source, port } };
}

function v1Port(text: string): number | undefined {
  if (!/^(0|[1-9][0-9]{0,4})$/.test(text)) return undefined;
  const port = Number(text);
  return port <= 65535 ? port : undefined;
}

/** Dotted quad or colon-hex as the v1 text gives it (no zone, no brackets). */
function isAddress(text: string, family: 4 | 6): boolean {
  if (family === 4)
    return /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/.test(text);
  return /^[0-9A-Fa-f:.]{2,45}$/.test(text) && text.includes(':') && ipv6Bytes(text) !== undefined;
}

/** The 16 bytes of an IPv6 text, undefined when it is not one (a check, so a header cannot smuggle junk). */
function ipv6Bytes(text: string): number[] | undefined {
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const groups = (part: string): number[] | undefined => {
    if (part === '') return [];
    const out: number[] = [];
    for (const g of part.split(':')) {
      if (!/^[0-9A-Fa-f]{1,4}$/.test(g)) return undefined;
      out.push(Number.parseInt(g, 16));
    }
    return out;
  };
  const left = groups(halves[0]!);
  const right = halves.length === 2 ? groups(halves[1]!) : [];
  if (left === undefined || right === undefined) return undefined;
  const missing = 8 - left.length - right.length;
  if ((halves.length === 1 && missing !== 0) || (halves.length === 2 && missing < 1)) return undefined;
  return [...left, ...new Array<number>(missing).fill(0), ...right];
}

function parseV2(data: Buffer): ProxyHeader {
  const seen = Math.min(data.length, V2_SIGNATURE.length);
  if (!data.subarray(0, seen).equals(V2_SIGNATURE.subarray(0, seen)))
    return refused('no PROXY protocol header');
  if (data.length < 16) return MORE;
  const versionCommand = data[12]!;
  if (versionCommand >> 4 !== 2) return refused(`v2 version must be 2, not ${versionCommand >> 4}`);
  const command = versionCommand & 0x0f;
  if (command > 1) return refused(`v2 command must be LOCAL or PROXY, not ${command}`);
  const length = data.readUInt16BE(14);
  if (length > V2_MAX_LENGTH) return refused(`v2 header of ${length} bytes, more than ${V2_MAX_LENGTH}`);
  if (data.length < 16 + length) return MORE;
  const consumed = 16 + length;
  // LOCAL: the balancer's own connection (a health check); its address stands, the block is skipped.
  if (command === 0) return { kind: 'header', consumed, source: undefined };
  const family = data[13]! >> 4;
  const transport = data[13]! & 0x0f;
  if (family === 0) return { kind: 'header', consumed, source: undefined };
  if (transport !== 1) return refused('v2 transport must be STREAM');
  if (family === 1) {
    if (length < 12) return refused('v2 IPv4 address block shorter than 12 bytes');
    const address = [...data.subarray(16, 20)].join('.');
    return { kind: 'header', consumed, source: { address, port: data.readUInt16BE(24) } };
  }
  if (family === 2) {
    if (length < 36) return refused('v2 IPv6 address block shorter than 36 bytes');
    const groups: string[] = [];
    for (let i = 0; i < 8; i++) groups.push(data.readUInt16BE(16 + i * 2).toString(16));
    return { kind: 'header', consumed, source: { address: groups.join(':'), port: data.readUInt16BE(48) } };
  }
  return refused('v2 family must be INET or INET6 (UNIX sockets are not clients of a listener)');
}

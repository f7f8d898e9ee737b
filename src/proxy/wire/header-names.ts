// The header names the proxy acts on, recognised on a head's bytes in any case without making a string of the
// name: the parsers and the header rules ask which of them a line's name is, and get the one lower-case
// constant for it (the same string every time, so comparing or looking it up in a Set costs no hashing).
import { HOP_BY_HOP } from './headers.js';

/** Names the proxy reads or rewrites besides the hop-by-hop ones (headers.ts). */
const NAMED = [
  'host',
  'content-length',
  'expect',
  'date',
  'server',
  'x-portico-upstream-service-time',
  'x-forwarded-for',
  'x-request-id',
  'traceparent',
  'forwarded',
];

/** A known name: the one lower-case string for it, a number for tables of flags, its bytes to compare with. */
export interface KnownName {
  readonly name: string;
  readonly id: number;
  readonly bytes: Uint8Array;
}

/** Every known name; a name's id is its place here. */
const KNOWN: KnownName[] = [...new Set([...HOP_BY_HOP, ...NAMED])].map((name, id) => ({
  name,
  id,
  bytes: Buffer.from(name, 'latin1'),
}));

/** The known names by length: a name of a length with no entry is none of them. */
const BY_LENGTH: KnownName[][] = [];
for (const known of KNOWN) {
  BY_LENGTH[known.name.length] ??= [];
  BY_LENGTH[known.name.length]!.push(known);
}

/** One flag per known name (by id): whether it is one of `names`. Names that are not known are left out. */
export function nameFlags(names: Iterable<string>): Uint8Array {
  const wanted = new Set(names);
  return Uint8Array.from(KNOWN, (known) => (wanted.has(known.name) ? 1 : 0));
}

/** The known name bytes [from, to) spell in any case (they are a token's, so `| 0x20` is exact), or undefined. */
export function knownName(bytes: Uint8Array, from: number, to: number): KnownName | undefined {
  const candidates = BY_LENGTH[to - from];
  if (candidates === undefined) return undefined;
  const first = bytes[from]! | 0x20;
  for (let k = 0; k < candidates.length; k++) {
    const known = candidates[k]!.bytes;
    if (known[0] !== first) continue;
    let i = 1;
    while (i < known.length && (bytes[from + i]! | 0x20) === known[i]) i++;
    if (i === known.length) return candidates[k];
  }
  return undefined;
}

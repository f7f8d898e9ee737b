// The request path every route decision sees and every backend receives: normalised once, so a path spelled
// another way (`/%61dmin`, `//admin`, `/public/../admin`) is the path it means, and a backend never resolves a
// path the proxy did not match. RFC 3986 §6.2.2: escapes of unreserved characters are decoded, the hex of other
// escapes upper-cased, dot segments removed (§5.2.4); repeated slashes are merged. A path whose meaning servers
// disagree on is refused: an escaped `/` or `\` (a segment separator to some, data to others), `;` (Tomcat and
// Spring cut path parameters and read `..;` as `..`, others keep them), a NUL, `\` and `#` (not path characters).

const PERCENT = 37; // '%'
const SLASH = 47; // '/'
const DOT = 46; // '.'
const SEMICOLON = 59; // ';'
const BACKSLASH = 92; // '\'
const HASH = 35; // '#'

/** RFC 3986 unreserved characters, by code: their escapes mean the character itself. */
const UNRESERVED = new Uint8Array(128);
for (let c = 48; c <= 57; c++) UNRESERVED[c] = 1;
for (let c = 65; c <= 90; c++) UNRESERVED[c] = 1;
for (let c = 97; c <= 122; c++) UNRESERVED[c] = 1;
for (const c of '-._~') UNRESERVED[c.charCodeAt(0)] = 1;

/** Escaped, these would change how some server splits or ends the path: `/`, `\`, `;`, NUL. */
const REFUSED_ESCAPES: ReadonlySet<number> = new Set([SLASH, BACKSLASH, SEMICOLON, 0]);

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  const lower = c | 0x20;
  return lower >= 97 && lower <= 102 ? lower - 87 : -1;
}

/** Whether the path can need any change: an escape, a dot segment, a repeated slash, or a refused character. */
function mayChange(path: string): boolean {
  for (let i = 0; i < path.length; i++) {
    const c = path.charCodeAt(i);
    if (c === PERCENT || c === SEMICOLON || c === BACKSLASH || c === HASH) return true;
    if (c === SLASH && i + 1 < path.length) {
      const next = path.charCodeAt(i + 1);
      if (next === SLASH || next === DOT) return true;
    }
  }
  return false;
}

/** Escapes decoded where they stand for unreserved characters, upper-cased elsewhere; undefined: refused. */
function decodeUnreserved(path: string): string | undefined {
  let out = '';
  let from = 0;
  for (let i = 0; i < path.length; i++) {
    const c = path.charCodeAt(i);
    if (c === SEMICOLON || c === BACKSLASH || c === HASH) return undefined;
    if (c !== PERCENT) continue;
    const high = hexValue(path.charCodeAt(i + 1));
    const low = hexValue(path.charCodeAt(i + 2));
    if (high < 0 || low < 0) return undefined;
    const byte = high * 16 + low;
    if (REFUSED_ESCAPES.has(byte)) return undefined;
    out += path.slice(from, i);
    out +=
      byte < 128 && UNRESERVED[byte] === 1 ? String.fromCharCode(byte) : path.slice(i, i + 3).toUpperCase();
    i += 2;
    from = i + 1;
  }
  return from === 0 ? path : out + path.slice(from);
}

/** Dot segments removed (RFC 3986 §5.2.4, never above the root) and empty segments merged; a final `/` kept. */
function removeDotSegments(path: string): string {
  const segments = path.split('/');
  const kept: string[] = [];
  let trailingSlash = false;
  // segments[0] is the empty text before the leading '/'.
  for (let i = 1; i < segments.length; i++) {
    const segment = segments[i]!;
    const last = i === segments.length - 1;
    if (segment === '' || segment === '.') trailingSlash = last;
    else if (segment === '..') {
      kept.pop();
      trailingSlash = last;
    } else {
      kept.push(segment);
      trailingSlash = false;
    }
  }
  if (kept.length === 0) return '/';
  return `/${kept.join('/')}${trailingSlash ? '/' : ''}`;
}

/**
 * The normalised form of an origin-form path (it starts with `/`, no query), the same string when nothing
 * changes; undefined when the path is refused (answered 400).
 */
export function normalizePath(path: string): string | undefined {
  if (!mayChange(path)) return path;
  const decoded = decodeUnreserved(path);
  if (decoded === undefined) return undefined;
  const normalized = removeDotSegments(decoded);
  return normalized === path ? path : normalized;
}

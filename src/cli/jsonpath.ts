// kubectl's JSONPath templates for `get -o jsonpath=...`: the subset people use (`{.a.b}`, `{.items[*].x}`,
// `{range .items[*]}...{end}`, `{"\n"}`, `[?(@.x=="y")]`, indices, slices, `..x`), parsed once, then run per
// object. Missing fields print nothing, as kubectl's printer allows missing keys.

type Step =
  | { kind: 'child'; names: string[] }
  | { kind: 'descend'; name: string | undefined }
  | { kind: 'wildcard' }
  | { kind: 'index'; indices: number[] }
  | { kind: 'slice'; start: number | undefined; end: number | undefined; step: number | undefined }
  | { kind: 'filter'; filter: Filter };

interface Path {
  /** `$` starts at the object given; `.` and `@` at the current one (a range's element). */
  fromRoot: boolean;
  steps: Step[];
}

type Literal = string | number | boolean | null;
type Operand = { kind: 'path'; path: Path } | { kind: 'literal'; value: Literal };
type Comparison = '==' | '!=' | '<' | '<=' | '>' | '>=';

interface Filter {
  left: Path;
  /** Absent: the element passes when `left` finds something. */
  compare?: { op: Comparison; right: Operand };
}

type Piece =
  | { kind: 'text'; text: string }
  | { kind: 'path'; path: Path }
  | { kind: 'range'; path: Path; body: Piece[] };

/** A template parsed once: `run` prints what it selects from one object. */
export interface JsonPathTemplate {
  run(value: unknown): string;
}

/** A template that cannot be parsed; `column` counts from 1 in the template as given. */
export class JsonPathError extends Error {
  constructor(
    readonly column: number,
    problem: string,
  ) {
    super(`column ${column}: ${problem}`);
    this.name = 'JsonPathError';
  }
}

export function parseJsonPath(template: string): JsonPathTemplate {
  const cursor = { text: template, at: 0 };
  const pieces = parsePieces(cursor, undefined);
  return { run: (value) => runPieces(pieces, value, value) };
}

interface Cursor {
  text: string;
  at: number;
}

function fail(cursor: Cursor, problem: string, at = cursor.at): never {
  throw new JsonPathError(at + 1, problem);
}

/** Text and `{...}` expressions up to the end, or up to the `{end}` of the range opened at `rangeAt`. */
function parsePieces(cursor: Cursor, rangeAt: number | undefined): Piece[] {
  const pieces: Piece[] = [];
  for (;;) {
    const open = cursor.text.indexOf('{', cursor.at);
    const textEnd = open === -1 ? cursor.text.length : open;
    if (textEnd > cursor.at) pieces.push({ kind: 'text', text: cursor.text.slice(cursor.at, textEnd) });
    cursor.at = textEnd;
    if (open === -1) {
      if (rangeAt !== undefined)
        fail(cursor, `{range} opened at column ${rangeAt + 1} has no {end}`, rangeAt);
      return pieces;
    }
    const braceAt = cursor.at;
    cursor.at++;
    skipSpaces(cursor);
    if (keyword(cursor, 'end')) {
      if (rangeAt === undefined) fail(cursor, '{end} without a {range} before it', braceAt);
      closeBrace(cursor, braceAt);
      return pieces;
    }
    if (keyword(cursor, 'range')) {
      const path = parsePath(cursor);
      closeBrace(cursor, braceAt);
      pieces.push({ kind: 'range', path, body: parsePieces(cursor, braceAt) });
      continue;
    }
    if (cursor.text[cursor.at] === '"' || cursor.text[cursor.at] === "'") {
      const value = parseQuoted(cursor);
      closeBrace(cursor, braceAt);
      pieces.push({ kind: 'text', text: value });
      continue;
    }
    const path = parsePath(cursor);
    closeBrace(cursor, braceAt);
    pieces.push({ kind: 'path', path });
  }
}

function skipSpaces(cursor: Cursor): void {
  while (cursor.text[cursor.at] === ' ') cursor.at++;
}

/** Consumes `word` when it stands alone (followed by a space or `}`). */
function keyword(cursor: Cursor, word: string): boolean {
  if (!cursor.text.startsWith(word, cursor.at)) return false;
  const next = cursor.text[cursor.at + word.length];
  if (next !== ' ' && next !== '}') return false;
  cursor.at += word.length;
  skipSpaces(cursor);
  return true;
}

function closeBrace(cursor: Cursor, braceAt: number): void {
  skipSpaces(cursor);
  if (cursor.text[cursor.at] === '}') {
    cursor.at++;
    return;
  }
  if (cursor.at >= cursor.text.length) fail(cursor, `'{' at column ${braceAt + 1} is never closed`, braceAt);
  fail(cursor, `unexpected '${cursor.text[cursor.at]}' in the expression opened at column ${braceAt + 1}`);
}

/** A double- or single-quoted string; double quotes take JSON's escapes (`"\n"`, `"\t"`). */
function parseQuoted(cursor: Cursor): string {
  const start = cursor.at;
  const quote = cursor.text[start];
  let at = start + 1;
  while (at < cursor.text.length && cursor.text[at] !== quote) at += cursor.text[at] === '\\' ? 2 : 1;
  if (at >= cursor.text.length) fail(cursor, `string opened at column ${start + 1} is never closed`, start);
  cursor.at = at + 1;
  const body = cursor.text.slice(start + 1, at);
  if (quote === "'") return body.replaceAll("\\'", "'");
  try {
    return JSON.parse(`"${body}"`) as string;
  } catch {
    return fail(cursor, `string opened at column ${start + 1} has an invalid escape`, start);
  }
}

const NAME_END = new Set(['.', '[', ']', '}', ' ', ')', '(', ',', '=', '!', '<', '>', '"', "'"]);

/** A field name after `.`; `\.` keeps a dot in it (`{.metadata.labels.app\.kubernetes\.io/name}`). */
function parseName(cursor: Cursor): string {
  let name = '';
  while (cursor.at < cursor.text.length) {
    const c = cursor.text[cursor.at]!;
    if (c === '\\' && cursor.text[cursor.at + 1] === '.') {
      name += '.';
      cursor.at += 2;
      continue;
    }
    if (NAME_END.has(c)) break;
    name += c;
    cursor.at++;
  }
  return name;
}

function parsePath(cursor: Cursor): Path {
  const start = cursor.at;
  const first = cursor.text[cursor.at];
  const fromRoot = first === '$';
  if (first === '$' || first === '@') cursor.at++;
  else if (first !== '.' && first !== '[') fail(cursor, "expected a path starting with '.', '@' or '$'");
  const steps: Step[] = [];
  for (;;) {
    const c = cursor.text[cursor.at];
    if (c === '.' && cursor.text[cursor.at + 1] === '.') {
      cursor.at += 2;
      if (cursor.text[cursor.at] === '*') {
        cursor.at++;
        steps.push({ kind: 'descend', name: undefined });
      } else {
        const nameAt = cursor.at;
        const name = parseName(cursor);
        if (name === '') fail(cursor, "expected a field name or '*' after '..'", nameAt);
        steps.push({ kind: 'descend', name });
      }
    } else if (c === '.') {
      cursor.at++;
      if (cursor.text[cursor.at] === '*') {
        cursor.at++;
        steps.push({ kind: 'wildcard' });
      } else {
        const name = parseName(cursor);
        // A lone `.` (or one before `[`) is the current object itself.
        if (name !== '') steps.push({ kind: 'child', names: [name] });
      }
    } else if (c === '[') {
      steps.push(parseBracket(cursor));
    } else {
      if (cursor.at === start) fail(cursor, 'expected a path');
      return { fromRoot, steps };
    }
  }
}

function parseBracket(cursor: Cursor): Step {
  const open = cursor.at;
  cursor.at++;
  skipSpaces(cursor);
  let step: Step;
  const c = cursor.text[cursor.at];
  if (c === '*') {
    cursor.at++;
    step = { kind: 'wildcard' };
  } else if (c === '?') {
    step = { kind: 'filter', filter: parseFilter(cursor) };
  } else if (c === "'" || c === '"') {
    const names = [parseQuoted(cursor)];
    while (consume(cursor, ',')) {
      skipSpaces(cursor);
      const q = cursor.text[cursor.at];
      if (q !== "'" && q !== '"') fail(cursor, "expected a quoted field name after ','");
      names.push(parseQuoted(cursor));
    }
    step = { kind: 'child', names };
  } else {
    step = parseIndices(cursor);
  }
  skipSpaces(cursor);
  if (cursor.text[cursor.at] !== ']') {
    if (cursor.at >= cursor.text.length) fail(cursor, `'[' at column ${open + 1} is never closed`, open);
    fail(cursor, `expected ']' to close the '[' at column ${open + 1}`);
  }
  cursor.at++;
  return step;
}

function consume(cursor: Cursor, c: string): boolean {
  skipSpaces(cursor);
  if (cursor.text[cursor.at] !== c) return false;
  cursor.at++;
  return true;
}

function parseInteger(cursor: Cursor): number | undefined {
  skipSpaces(cursor);
  const match = /^-?\d+/.exec(cursor.text.slice(cursor.at));
  if (match === null) return undefined;
  cursor.at += match[0].length;
  return Number(match[0]);
}

/** `[0]`, `[-1]`, `[0,2]`, `[1:3]`, `[::2]`. */
function parseIndices(cursor: Cursor): Step {
  const start = parseInteger(cursor);
  if (consume(cursor, ':')) {
    const end = parseInteger(cursor);
    const step = consume(cursor, ':') ? parseInteger(cursor) : undefined;
    if (step === 0) fail(cursor, 'a slice step cannot be 0');
    return { kind: 'slice', start, end, step };
  }
  if (start === undefined)
    fail(cursor, "expected '*', an index, a slice, a quoted name or a filter '?(...)'");
  const indices = [start];
  while (consume(cursor, ',')) {
    const next = parseInteger(cursor);
    if (next === undefined) fail(cursor, "expected an index after ','");
    indices.push(next);
  }
  return { kind: 'index', indices };
}

const COMPARISONS: readonly Comparison[] = ['==', '!=', '<=', '>=', '<', '>'];

/** `?(@.path)` or `?(@.path OP operand)`; the cursor is on the `?`. */
function parseFilter(cursor: Cursor): Filter {
  const at = cursor.at;
  cursor.at++;
  if (cursor.text[cursor.at] !== '(') fail(cursor, "expected '(' after '?'");
  cursor.at++;
  skipSpaces(cursor);
  const left = parsePath(cursor);
  skipSpaces(cursor);
  const op = COMPARISONS.find((o) => cursor.text.startsWith(o, cursor.at));
  let filter: Filter = { left };
  if (op !== undefined) {
    cursor.at += op.length;
    skipSpaces(cursor);
    filter = { left, compare: { op, right: parseOperand(cursor) } };
  }
  skipSpaces(cursor);
  if (cursor.text[cursor.at] !== ')') {
    if (cursor.at >= cursor.text.length) fail(cursor, `filter at column ${at + 1} is never closed`, at);
    fail(cursor, "expected ')' or a comparison (==, !=, <, <=, >, >=) in the filter");
  }
  cursor.at++;
  return filter;
}

function parseOperand(cursor: Cursor): Operand {
  const c = cursor.text[cursor.at];
  if (c === '"' || c === "'") return { kind: 'literal', value: parseQuoted(cursor) };
  if (c === '@' || c === '$' || c === '.') return { kind: 'path', path: parsePath(cursor) };
  const match = /^(-?\d+(?:\.\d+)?|true|false|null)/.exec(cursor.text.slice(cursor.at));
  if (match === null) fail(cursor, 'expected a quoted string, a number, true, false, null or a path');
  cursor.at += match[0].length;
  return { kind: 'literal', value: JSON.parse(match[0]) as Literal };
}

function runPieces(pieces: readonly Piece[], root: unknown, current: unknown): string {
  let out = '';
  for (const piece of pieces) {
    if (piece.kind === 'text') out += piece.text;
    else if (piece.kind === 'path') out += select(piece.path, root, current).map(printed).join(' ');
    else for (const item of select(piece.path, root, current)) out += runPieces(piece.body, root, item);
  }
  return out;
}

/** kubectl prints strings as they are, other scalars as text, objects and lists as JSON. */
function printed(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === null) return '';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

function select(path: Path, root: unknown, current: unknown): unknown[] {
  let nodes: unknown[] = [path.fromRoot ? root : current];
  for (const step of path.steps) nodes = nodes.flatMap((node) => applyStep(step, node, root));
  return nodes;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A list's elements, or an object's values by key order (as Go's sorted map iteration gives them). */
function members(node: unknown): unknown[] {
  if (Array.isArray(node)) return node;
  if (isRecord(node))
    return Object.keys(node)
      .sort()
      .map((k) => node[k]);
  return [];
}

function applyStep(step: Step, node: unknown, root: unknown): unknown[] {
  switch (step.kind) {
    case 'child':
      return isRecord(node) ? step.names.filter((n) => Object.hasOwn(node, n)).map((n) => node[n]) : [];
    case 'wildcard':
      return members(node);
    case 'descend':
      return descendants(node).flatMap((d) =>
        step.name === undefined ? members(d) : applyStep({ kind: 'child', names: [step.name] }, d, root),
      );
    case 'index':
      if (!Array.isArray(node)) return [];
      return step.indices
        .map((i) => (i < 0 ? node.length + i : i))
        .filter((i) => i >= 0 && i < node.length)
        .map((i) => node[i]);
    case 'slice':
      return Array.isArray(node) ? sliced(node, step) : [];
    case 'filter':
      return members(node).filter((element) => passes(step.filter, root, element));
  }
}

/** The node and everything under it, depth first. */
function descendants(node: unknown): unknown[] {
  return [node, ...members(node).flatMap(descendants)];
}

function sliced(list: unknown[], slice: { start?: number; end?: number; step?: number }): unknown[] {
  const n = list.length;
  const bound = (i: number) => Math.min(Math.max(i < 0 ? n + i : i, 0), n);
  const step = slice.step ?? 1;
  const out: unknown[] = [];
  if (step > 0) {
    for (let i = bound(slice.start ?? 0); i < bound(slice.end ?? n); i += step) out.push(list[i]);
  } else {
    const start = slice.start === undefined ? n - 1 : Math.min(bound(slice.start), n - 1);
    const end = slice.end === undefined ? -1 : bound(slice.end);
    for (let i = start; i > end; i += step) out.push(list[i]);
  }
  return out;
}

function passes(filter: Filter, root: unknown, element: unknown): boolean {
  const left = select(filter.left, root, element);
  if (filter.compare === undefined) return left.length > 0 && left[0] !== null && left[0] !== false;
  const { op, right } = filter.compare;
  const rightValues = right.kind === 'literal' ? [right.value] : select(right.path, root, element);
  if (left.length === 0 || rightValues.length === 0) return op === '!=' && left.length !== rightValues.length;
  return compared(left[0], op, rightValues[0]);
}

function compared(a: unknown, op: Comparison, b: unknown): boolean {
  if (op === '==') return a === b;
  if (op === '!=') return a !== b;
  const ordered =
    (typeof a === 'number' && typeof b === 'number') || (typeof a === 'string' && typeof b === 'string');
  if (!ordered) return false;
  const x = a as number | string;
  const y = b as number | string;
  return op === '<' ? x < y : op === '<=' ? x <= y : op === '>' ? x > y : x >= y;
}

// YAML text → one plain value per document, with bounds: no input makes parsing throw, recurse without end or
// expand without end. Every document that cannot be used becomes an error with its line; the others still load.
import { Composer, type CST, type Document, LineCounter, Parser } from 'yaml';

/** Collections nested deeper than this are refused (the parser's composer recurses once per level). */
export const MAX_YAML_NESTING = 100;
/**
 * A document whose value, with every alias expanded, holds more values than this is refused. Aliases are
 * shared, not copied, by the parser, so counting bounds what later steps (copies, JSON) would expand.
 */
export const MAX_YAML_VALUES = 1_000_000;

export type YamlDocument =
  | { ok: true; doc: Document; value: unknown; line: number }
  | { ok: false; line: number; message: string };

/** The first line of an error's message: parser messages carry a source excerpt after it. */
function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0]!;
}

/** How deeply collections nest in a document's syntax tree, walked without recursion. */
function nestingDepth(root: CST.Token): number {
  let deepest = 0;
  const stack: { token: CST.Token; depth: number }[] = [{ token: root, depth: 0 }];
  while (stack.length > 0) {
    const { token, depth } = stack.pop()!;
    if (depth > deepest) deepest = depth;
    if (deepest > MAX_YAML_NESTING) return deepest;
    if (token.type === 'document') {
      if (token.value !== undefined) stack.push({ token: token.value, depth });
    } else if (token.type === 'block-map' || token.type === 'block-seq' || token.type === 'flow-collection') {
      for (const item of token.items) {
        const { key, value } = item as { key?: CST.Token | null; value?: CST.Token };
        if (key !== undefined && key !== null) stack.push({ token: key, depth: depth + 1 });
        if (value !== undefined) stack.push({ token: value, depth: depth + 1 });
      }
    }
  }
  return deepest;
}

/** Why a composed value cannot be used (it refers to itself, nests or expands too far), or undefined. */
export function expansionProblem(value: unknown): string | undefined {
  let count = 0;
  // Depth-first with an explicit stack; `exit` entries take a collection off the current path again.
  const onPath = new Set<object>();
  const stack: { value: unknown; depth: number; exit?: boolean }[] = [{ value, depth: 0 }];
  while (stack.length > 0) {
    const entry = stack.pop()!;
    const v = entry.value;
    if (entry.exit === true) {
      onPath.delete(v as object);
      continue;
    }
    if (++count > MAX_YAML_VALUES) {
      return `the document expands to more than ${MAX_YAML_VALUES.toLocaleString('en')} values through aliases`;
    }
    if (typeof v !== 'object' || v === null) continue;
    if (onPath.has(v)) return 'an alias refers to a collection that contains it';
    if (entry.depth >= MAX_YAML_NESTING) return `the document nests deeper than ${MAX_YAML_NESTING} levels`;
    onPath.add(v);
    stack.push({ value: v, depth: entry.depth, exit: true });
    const children = Array.isArray(v) ? v : v instanceof Map ? [...v.values()] : Object.values(v);
    for (const child of children) stack.push({ value: child, depth: entry.depth + 1 });
  }
  return undefined;
}

/** Parses every document of `text`; never throws. `lines` maps source offsets to lines for the caller too. */
export function parseYamlDocuments(text: string, lines: LineCounter = new LineCounter()): YamlDocument[] {
  const out: YamlDocument[] = [];
  const lineAt = (offset: number): number => lines.linePos(offset).line;
  let tokens: CST.Token[];
  try {
    tokens = [...new Parser(lines.addNewLine).parse(text)];
  } catch (error) {
    return [{ ok: false, line: 1, message: `YAML: ${firstLine(error)}` }];
  }
  // Too deep a document is left out before composing: the composer's recursion must never meet it.
  const usable: CST.Token[] = [];
  for (const token of tokens) {
    if (token.type === 'document' && nestingDepth(token) > MAX_YAML_NESTING) {
      out.push({
        ok: false,
        line: lineAt(token.offset),
        message: `YAML: collections nest deeper than ${MAX_YAML_NESTING} levels`,
      });
    } else usable.push(token);
  }
  let docs: Document[];
  try {
    docs = [...new Composer({ prettyErrors: false, uniqueKeys: true }).compose(usable)];
  } catch (error) {
    out.push({ ok: false, line: 1, message: `YAML: ${firstLine(error)}` });
    return out;
  }
  for (const doc of docs) {
    const start = lineAt(doc.contents?.range?.[0] ?? doc.range?.[0] ?? 0);
    const parseError = doc.errors[0];
    if (parseError !== undefined) {
      const line = parseError.linePos?.[0].line ?? lineAt(parseError.pos[0]);
      out.push({ ok: false, line, message: `YAML: ${firstLine(parseError)}` });
      continue;
    }
    let value: unknown;
    try {
      // No alias limit here: aliases are shared by the parser, and expansionProblem bounds what they expand to.
      value = doc.toJS({ maxAliasCount: -1 });
    } catch (error) {
      out.push({ ok: false, line: start, message: `YAML: ${firstLine(error)}` });
      continue;
    }
    const problem = expansionProblem(value);
    if (problem !== undefined) {
      out.push({ ok: false, line: start, message: `YAML: ${problem}` });
      continue;
    }
    out.push({ ok: true, doc, value, line: start });
  }
  out.sort((a, b) => a.line - b.line);
  return out;
}

// A function a reader cannot hold in their head gets split where a name would help: none in src/ is over 120
// lines, except parsers that read top-down and are listed here by name.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const SRC = fileURLToPath(new URL('../src', import.meta.url));
const MAX_LINES = 120;
/** `file:function` of the parsers allowed to be longer. */
const LONG_PARSERS = new Set<string>([]);

interface FunctionLength {
  where: string;
  lines: number;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

function functionName(node: ts.Node): string {
  if ((ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node)) && node.name)
    return node.name.getText();
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) return parent.name.getText();
  return '(anonymous)';
}

function functionLengths(name: string, text: string): FunctionLength[] {
  const source = ts.createSourceFile(name, text, ts.ScriptTarget.Latest, true);
  const found: FunctionLength[] = [];
  const visit = (node: ts.Node): void => {
    if (
      ts.isFunctionDeclaration(node) ||
      ts.isFunctionExpression(node) ||
      ts.isArrowFunction(node) ||
      ts.isMethodDeclaration(node)
    ) {
      const first = source.getLineAndCharacterOfPosition(node.getStart()).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      found.push({ where: `${name}:${functionName(node)}`, lines: last - first + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

test(`no function in src/ is over ${MAX_LINES} lines, parsers aside`, () => {
  const long = sourceFiles(SRC)
    .flatMap((file) => functionLengths(relative(SRC, file), readFileSync(file, 'utf8')))
    .filter((f) => f.lines > MAX_LINES && !LONG_PARSERS.has(f.where))
    .map((f) => `${f.where} (${f.lines} lines)`);
  assert.deepEqual(long, []);
});

test('the measure counts nested functions and arrow functions by their own lines', () => {
  const body = Array.from({ length: MAX_LINES + 5 }, (_, i) => `  const v${i} = ${i};`).join('\n');
  const text = `export function outer() {\n  const inner = () => {\n${body}\n  };\n  return inner;\n}\n`;
  const lengths = functionLengths('sample.ts', text);
  assert.deepEqual(
    lengths.map((f) => [f.where, f.lines]),
    [
      ['sample.ts:outer', MAX_LINES + 10],
      ['sample.ts:inner', MAX_LINES + 7],
    ],
  );
});

// The layering of docs/architecture.md, checked: every relative import in src/ goes to its own folder or to one
// the table lets it use, so a folder never reaches up (the translator never imports discovery, and so on).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const SRC = fileURLToPath(new URL('../src', import.meta.url));

const BELOW_PROVIDER = [
  'platform',
  'trace',
  'api',
  'ir',
  'translate',
  'certificates',
  'discovery',
  'infra/host',
  'infra/kubernetes',
  'runner',
];

/** Folder → the folders it may import besides itself (docs/architecture.md, "Folders and what each may import"). */
const MAY_IMPORT: Readonly<Record<string, readonly string[]>> = {
  platform: [],
  trace: ['platform'],
  api: ['platform'],
  ir: ['platform'],
  translate: ['api', 'ir', 'platform'],
  certificates: ['api', 'ir', 'platform'],
  discovery: ['api', 'certificates', 'ir', 'platform', 'trace'],
  proxy: ['ir', 'platform', 'trace'],
  'infra/host': ['ir', 'platform'],
  'infra/kubernetes': ['ir', 'platform'],
  shutdown: ['platform'],
  runner: ['api', 'ir', 'translate', 'platform', 'trace'],
  echo: ['proxy', 'platform'],
  provider: BELOW_PROVIDER,
  'provider/kubernetes': ['provider', ...BELOW_PROVIDER],
  'provider/standalone': ['provider', ...BELOW_PROVIDER],
  cli: [
    ...BELOW_PROVIDER,
    'provider',
    'provider/kubernetes',
    'provider/standalone',
    'proxy',
    'echo',
    'shutdown',
  ],
};

/** The folder a source file belongs to in the table: `src/proxy/downstream/h2/x.ts` → `proxy`, `src/infra/host/x.ts` → `infra/host`. */
function layerOf(file: string): string {
  const parts = relative(SRC, file).split(sep);
  if (parts.length === 1) return '(src root)';
  if ((parts[0] === 'infra' || parts[0] === 'provider') && parts.length > 2) return `${parts[0]}/${parts[1]}`;
  return parts[0] ?? '';
}

const PROXY = join(SRC, 'proxy');

/**
 * Inside src/proxy/, group → the groups it may import besides itself (docs/architecture.md, "Inside the proxy"):
 * wire syntax at the bottom, then telemetry, then the two contracts every direction shares (exchange.ts: what a
 * request and its response are to the handler; options.ts: every knob), then routing, then the two directions,
 * which never import each other; the top files (handler, runtime, listeners, workers/...) assemble them all.
 */
const PROXY_MAY_IMPORT: Readonly<Record<string, readonly string[]>> = {
  wire: [],
  limits: [],
  telemetry: ['wire'],
  contracts: ['wire', 'telemetry', 'limits'],
  access: ['wire', 'telemetry', 'contracts'],
  routing: ['wire', 'telemetry', 'contracts', 'access'],
  upstream: ['wire', 'telemetry', 'contracts', 'access', 'routing'],
  downstream: ['wire', 'telemetry', 'contracts', 'access', 'routing'],
  // Layer-4 listeners accept and relay both ways: certificate choice from downstream, backend TLS from upstream.
  layer4: ['wire', 'limits', 'telemetry', 'contracts', 'access', 'routing', 'upstream', 'downstream'],
  top: ['wire', 'limits', 'telemetry', 'contracts', 'access', 'routing', 'upstream', 'downstream', 'layer4'],
};

const PROXY_CONTRACTS = ['exchange.ts', 'options.ts'];

/** The group of a file in src/proxy/: its first folder when that is a group, a contract, else the top. */
function proxyGroupOf(file: string): string {
  const rel = relative(PROXY, file).replace(/\.js$/, '.ts');
  const first = rel.split(sep)[0] ?? '';
  if (first !== 'top' && first !== 'contracts' && first in PROXY_MAY_IMPORT) return first;
  return PROXY_CONTRACTS.includes(rel) ? 'contracts' : 'top';
}

/** The imports of src/proxy/ files that go to a group their own may not use. */
function proxyViolations(files: readonly string[], importsOf: (file: string) => string[]): string[] {
  const violations: string[] = [];
  for (const file of files) {
    const from = proxyGroupOf(file);
    const allowed = PROXY_MAY_IMPORT[from] ?? [];
    for (const target of importsOf(file)) {
      if (layerOf(target) !== 'proxy') continue;
      const to = proxyGroupOf(target);
      if (to !== from && !allowed.includes(to))
        violations.push(`${relative(SRC, file)} (${from}) imports ${to}`);
    }
  }
  return violations;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

const IMPORT =
  /(?:^|\n)\s*(?:import|export)[^'"]*?from\s*'(\.{1,2}\/[^']+)'|import\(\s*'(\.{1,2}\/[^']+)'\s*\)/g;

function imports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(IMPORT)].map((m) => resolve(dirname(file), m[1] ?? m[2] ?? ''));
}

test('the layer table covers every folder of src/, and no file sits at its root', () => {
  const layers = new Set(sourceFiles(SRC).map(layerOf));
  assert.deepEqual([...layers].filter((layer) => !(layer in MAY_IMPORT)).sort(), []);
});

test('every import in src/ stays in its folder or goes to one the layer table allows', () => {
  const violations: string[] = [];
  for (const file of sourceFiles(SRC)) {
    const from = layerOf(file);
    const allowed = MAY_IMPORT[from] ?? [];
    for (const target of imports(file)) {
      const to = layerOf(target);
      if (to !== from && !allowed.includes(to))
        violations.push(`${relative(SRC, file)} (${from}) imports ${to}`);
    }
  }
  assert.deepEqual(violations, []);
});

test('inside src/proxy/, every import stays in its group or goes to one below it', () => {
  const files = sourceFiles(PROXY);
  assert.deepEqual(proxyViolations(files, imports), []);
});

test('the proxy group check fails on an upward import (wire reaching into downstream)', () => {
  const wireFile = join(PROXY, 'wire', 'headers.ts');
  const upward = () => [join(PROXY, 'downstream', 'client-server.ts'), join(PROXY, 'wire', 'http-syntax.ts')];
  assert.deepEqual(proxyViolations([wireFile], upward), ['proxy/wire/headers.ts (wire) imports downstream']);
  assert.equal(proxyGroupOf(join(PROXY, 'downstream', 'h2', 'server.ts')), 'downstream');
  assert.equal(proxyGroupOf(join(PROXY, 'exchange.ts')), 'contracts');
  assert.equal(proxyGroupOf(join(PROXY, 'workers', 'pool.ts')), 'top');
  assert.equal(proxyGroupOf(join(PROXY, 'handler.ts')), 'top');
});

test('the import scanner sees static, re-export and dynamic imports (so the check above can fail)', () => {
  const file = join(SRC, 'cli', 'main.ts');
  const found = imports(file).map(layerOf);
  assert.ok(found.length > 0, 'cli/main.ts imports something');
  assert.equal(layerOf(join(SRC, 'proxy', 'downstream', 'h2', 'server.ts')), 'proxy');
  assert.equal(layerOf(join(SRC, 'infra', 'host', 'supervisor.ts')), 'infra/host');
  const sample =
    "import { a } from '../translate/index.js';\nexport { b } from './x.js';\nawait import('../proxy/y.js');";
  const targets = [...sample.matchAll(IMPORT)].map((m) => m[1] ?? m[2]);
  assert.deepEqual(targets, ['../translate/index.js', './x.js', '../proxy/y.js']);
});

/** Pairs of files that import each other, each pair once, as paths relative to src/. */
function mutualImports(importsOf: ReadonlyMap<string, readonly string[]>): string[] {
  const pairs: string[] = [];
  for (const [file, targets] of importsOf) {
    for (const target of targets) {
      if (file < target && importsOf.get(target)?.includes(file) === true)
        pairs.push(`${relative(SRC, file)} <-> ${relative(SRC, target)}`);
    }
  }
  return pairs.sort();
}

/** Each source file's relative imports, as the .ts files they load (`./x.js` → `x.ts`). */
function importGraph(files: readonly string[]): Map<string, string[]> {
  return new Map(files.map((file) => [file, imports(file).map((target) => target.replace(/\.js$/, '.ts'))]));
}

test('no two files in src/ import each other (a circle is opened by moving the shared part down)', () => {
  assert.deepEqual(mutualImports(importGraph(sourceFiles(SRC))), []);
});

test('the circle check finds a pair that imports each other, and only that pair', () => {
  const a = join(SRC, 'runner', 'a.ts');
  const b = join(SRC, 'runner', 'b.ts');
  const c = join(SRC, 'runner', 'c.ts');
  const graph = new Map([
    [a, [b, c]],
    [b, [a]],
    [c, []],
  ]);
  assert.deepEqual(mutualImports(graph), ['runner/a.ts <-> runner/b.ts']);
});

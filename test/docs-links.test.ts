// Every relative link in the repository's Markdown points at a file that exists, and every #anchor at a heading
// of its page (GitHub's anchor rules: lower case, punctuation dropped, spaces to hyphens, repeats numbered), so
// the README and docs/ never send a reader nowhere. Links to other sites are not fetched (no network here).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('..', import.meta.url));

/** The Markdown files git tracks (and new ones not ignored), outside test data and dependencies. */
function markdownFiles(): string[] {
  return execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.md'], {
    cwd: REPO,
    encoding: 'utf8',
  })
    .split('\n')
    .filter((f) => f !== '' && !f.includes('testdata/') && existsSync(join(REPO, f)))
    .map((f) => join(REPO, f));
}

/** Text outside fenced code blocks and inline code, where a bracket is not a link. */
function proseOf(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
}

/** GitHub's anchors for a page's headings. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const match of markdown.replace(/^```[\s\S]*?^```/gm, '').matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const base = (match[1] ?? '')
      .replace(/`/g, '')
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

interface Link {
  file: string;
  line: number;
  target: string;
}

function linksOf(file: string): Link[] {
  const prose = proseOf(readFileSync(file, 'utf8'));
  const links: Link[] = [];
  for (const match of prose.matchAll(/\]\(([^)\s]+)(?: "[^"]*")?\)/g)) {
    const target = match[1] ?? '';
    if (/^[a-z]+:/i.test(target)) continue;
    links.push({ file, line: prose.slice(0, match.index).split('\n').length, target });
  }
  return links;
}

function problemOf(link: Link): string | undefined {
  const [path = '', anchor] = link.target.split('#');
  const target = path === '' ? link.file : join(dirname(link.file), decodeURIComponent(path));
  if (!existsSync(target)) return `${path} does not exist`;
  if (anchor === undefined || anchor === '') return undefined;
  if (statSync(target).isDirectory() || !target.endsWith('.md'))
    return `#${anchor} on a file that is not Markdown`;
  return anchorsOf(readFileSync(target, 'utf8')).has(anchor)
    ? undefined
    : `no heading #${anchor} in ${relative(REPO, target)}`;
}

test('the anchors of headings follow GitHub', () => {
  assert.deepEqual(
    [
      ...anchorsOf(
        '# Portico\n## Fleet shape (DataPlaneProxy `spec.kubernetes`)\n## Test\n## Test\n```\n# not a heading\n```\n',
      ),
    ],
    ['portico', 'fleet-shape-dataplaneproxy-speckubernetes', 'test', 'test-1'],
  );
});

test('every relative link in the Markdown files leads to a file, and every anchor to a heading', () => {
  const files = markdownFiles();
  assert.ok(
    files.some((f) => f.endsWith('README.md')),
    'the README is checked',
  );
  const problems = files
    .flatMap(linksOf)
    .map((link) => ({ link, problem: problemOf(link) }))
    .filter((p) => p.problem !== undefined)
    .map(({ link, problem }) => `${relative(REPO, link.file)}:${link.line}: (${link.target}) ${problem}`);
  assert.deepEqual(problems, []);
});

test('a link to a missing file or heading is found', () => {
  const readme = join(REPO, 'README.md');
  assert.equal(
    problemOf({ file: readme, line: 1, target: 'docs/no-such-page.md' }),
    'docs/no-such-page.md does not exist',
  );
  assert.match(
    problemOf({ file: readme, line: 1, target: '#no-such-heading' }) ?? '',
    /no heading #no-such-heading/,
  );
  assert.equal(problemOf({ file: readme, line: 1, target: 'docs/architecture.md#the-pipeline' }), undefined);
});

test('the LICENSE file is the license package.json declares', () => {
  const declared = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { license: string })
    .license;
  assert.equal(declared, 'Apache-2.0');
  const license = readFileSync(join(REPO, 'LICENSE'), 'utf8');
  assert.match(license, /^\s*Apache License\s+Version 2\.0, January 2004/);
  assert.match(license, /END OF TERMS AND CONDITIONS/);
});

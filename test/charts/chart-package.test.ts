// The chart as users get it: a README generated from values.yaml that must be current, and `npm run chart`,
// whose archive helm itself reads back (show readme, template) — with the toolchain's helm, as the chart's
// other tests use.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { parse } from 'yaml';
import { CHART_DIR, renderChartReadme, valueRows } from '../../scripts/chart-readme.js';
import { binary, REPO, readManifest } from '../../toolchain/manifest.js';

const chartYaml = readFileSync(join(CHART_DIR, 'Chart.yaml'), 'utf8');
const valuesYaml = readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8');
const out = mkdtempSync(join(tmpdir(), 'portico-chart-'));
after(() => rmSync(out, { recursive: true, force: true }));

function leafPaths(value: unknown, prefix = ''): string[] {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return [prefix.slice(0, -1)];
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 0) return [prefix.slice(0, -1)];
  return entries.flatMap(([k, v]) => leafPaths(v, `${prefix}${k}.`));
}

test('the chart README is what scripts/chart-readme.ts writes from values.yaml', () => {
  const committed = readFileSync(join(CHART_DIR, 'README.md'), 'utf8');
  assert.equal(
    committed,
    renderChartReadme(chartYaml, valuesYaml),
    'run node --import tsx scripts/chart-readme.ts',
  );
});

test('every value of values.yaml has a row with its default', () => {
  const rows = new Map(valueRows(valuesYaml).map((r) => [r.key, r]));
  for (const path of leafPaths(parse(valuesYaml))) {
    const row = rows.get(path);
    assert.ok(row !== undefined, `${path} has no row`);
    assert.notEqual(row.defaultValue, '', `${path} has no default shown`);
  }
  assert.equal(rows.get('logLevel')?.defaultValue, '"info"');
  assert.equal(rows.get('logLevel')?.description, 'debug, info, warn or error.');
  assert.match(
    rows.get('image')?.description ?? '',
    /^Image of the controller/,
    "the file's header is not a key's comment",
  );
});

test('a value added without regenerating makes the README stale', () => {
  const edited = valuesYaml.replace('logLevel: info\n', 'logLevel: info\n\n# How loud.\nlogFormat: text\n');
  assert.notEqual(renderChartReadme(chartYaml, edited), renderChartReadme(chartYaml, valuesYaml));
  assert.match(renderChartReadme(chartYaml, edited), /\| `logFormat` \| `"text"` \| How loud\. \|/);
});

test('npm run chart packages a chart helm reads back', () => {
  const packaged = spawnSync(
    process.execPath,
    ['--import', 'tsx', 'scripts/chart-package.ts', '--out', out],
    {
      cwd: REPO,
      encoding: 'utf8',
    },
  );
  assert.equal(packaged.status, 0, packaged.stderr);
  const version = (parse(chartYaml) as { version: string }).version;
  const archive = join(out, `gateway-helm-${version}.tgz`);
  assert.ok(existsSync(archive), packaged.stdout);
  assert.match(packaged.stdout, new RegExp(`chart: ${archive}`));
  const helm = binary(readManifest(), 'helm');
  const readme = spawnSync(helm, ['show', 'readme', archive], { encoding: 'utf8' });
  assert.equal(readme.status, 0, readme.stderr);
  assert.equal(readme.stdout.trim(), readFileSync(join(CHART_DIR, 'README.md'), 'utf8').trim());
  const rendered = spawnSync(helm, ['template', 'portico', archive, '-n', 'portico-gateway-system'], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  assert.equal(rendered.status, 0, rendered.stderr);
  assert.match(rendered.stdout, /image: "?ghcr\.io\/portico\/portico:0\.1\.0"?/);
});

test('logFormat json reaches the controller as --log-format=json; anything but text or json is refused', () => {
  const helm = binary(readManifest(), 'helm');
  const render = (value: string) =>
    spawnSync(
      helm,
      ['template', 'portico', CHART_DIR, '-n', 'portico-gateway-system', '--set', `logFormat=${value}`],
      {
        encoding: 'utf8',
        maxBuffer: 64 * 1024 * 1024,
      },
    );
  assert.match(render('json').stdout, /- --log-format=json\n/);
  assert.doesNotMatch(render('text').stdout, /--log-format/);
  const wrong = render('xml');
  assert.notEqual(wrong.status, 0);
  assert.match(wrong.stderr, /logFormat/);
});

test('npm run chart with an unknown option is a usage error, exit 2', () => {
  const wrong = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/chart-package.ts', '--push'], {
    cwd: REPO,
    encoding: 'utf8',
  });
  assert.equal(wrong.status, 2);
  assert.match(wrong.stderr, /usage: npm run chart/);
});

// `npm run chart`: the gateway-helm chart as one archive (`helm package`), into artifacts/ (or --out DIR),
// after checking that its README says what values.yaml says. helm is the one on PATH, else the test
// toolchain's (toolchain/README.md); neither: the error says so.
//
//   npm run chart [-- --out DIR]
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { manifestPath, REPO, readManifest } from '../toolchain/manifest.js';
import { CHART_DIR, renderChartReadme } from './chart-readme.js';

class ChartPackageError extends Error {
  readonly code = 'CHART_PACKAGE';
}

const USAGE = 'usage: npm run chart [-- --out DIR]';

/** helm from PATH, else the one `npm run toolchain` built. */
export function findHelm(): string {
  const onPath = spawnSync('helm', ['version', '--short'], { encoding: 'utf8' });
  if (onPath.error === undefined && onPath.status === 0) return 'helm';
  if (existsSync(manifestPath())) {
    const built = readManifest().binaries.helm;
    if (built !== undefined && existsSync(built)) return built;
  }
  throw new ChartPackageError(
    'helm is needed: put helm (v3.8 or newer) on PATH, or build the test toolchain (npm run toolchain -- --only helm)',
  );
}

function main(): void {
  let outDir = join(REPO, 'artifacts');
  try {
    const { values } = parseArgs({ options: { out: { type: 'string' } } });
    if (values.out !== undefined) outDir = resolve(values.out);
  } catch (error) {
    process.stderr.write(`chart: ${(error as Error).message}\n${USAGE}\n`);
    process.exit(2);
  }
  const readme = renderChartReadme(
    readFileSync(join(CHART_DIR, 'Chart.yaml'), 'utf8'),
    readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8'),
  );
  if (readFileSync(join(CHART_DIR, 'README.md'), 'utf8') !== readme)
    throw new ChartPackageError(
      'charts/gateway-helm/README.md is out of date: run node --import tsx scripts/chart-readme.ts',
    );
  const helm = findHelm();
  const lint = spawnSync(helm, ['lint', CHART_DIR], { encoding: 'utf8' });
  if (lint.status !== 0) throw new ChartPackageError(`helm lint failed:\n${lint.stdout}${lint.stderr}`);
  mkdirSync(outDir, { recursive: true });
  const packaged = spawnSync(helm, ['package', CHART_DIR, '--destination', outDir], { encoding: 'utf8' });
  if (packaged.status !== 0) throw new ChartPackageError(`helm package failed: ${packaged.stderr}`);
  const archive = /saved it to: (.+)$/m.exec(packaged.stdout)?.[1]?.trim();
  process.stdout.write(`chart: ${archive ?? packaged.stdout.trim()}\n`);
}

try {
  main();
} catch (error) {
  if (error instanceof ChartPackageError) {
    process.stderr.write(`chart: ${error.message}\n`);
    process.exit(1);
  }
  throw error;
}

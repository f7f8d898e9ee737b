// Golden tests: testdata/<case>.in.yaml → <case>.out.yaml (statuses, fleet configs, infra).
// Regenerate with `UPDATE_GOLDEN=1 node scripts/run-tests.mjs test/translate` and review the diff.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { formatResourceError } from '../../src/api/common.js';
import { parseYamlFile } from '../../src/api/load.js';
import { buildSnapshot } from '../../src/api/snapshot.js';
import { validateFleetConfig } from '../../src/ir/validate.js';
import { translate } from '../../src/translate/index.js';
import { goldenText, readHeader } from './golden-format.js';
import { withTestCertificates } from './testdata-certificates.js';

const dir = fileURLToPath(new URL('./testdata/', import.meta.url));
const cases = readdirSync(dir)
  .filter((f) => f.endsWith('.in.yaml'))
  .map((f) => f.slice(0, -'.in.yaml'.length))
  .sort();

/** A fixed permutation that moves every object (no randomness in tests either). */
function shuffled<T>(items: T[]): T[] {
  const out = [...items].reverse();
  const half = Math.floor(out.length / 2);
  return [...out.slice(half), ...out.slice(0, half)];
}

for (const name of cases) {
  test(`golden ${name}`, () => {
    const file = join(dir, `${name}.in.yaml`);
    const text = withTestCertificates(readFileSync(file, 'utf8'));
    const header = readHeader(text);
    const loaded = parseYamlFile(`${name}.in.yaml`, text);
    assert.deepEqual(loaded.errors.map(formatResourceError), header.expectLoadErrors);
    const objects = loaded.objects.map((o) => o.object);
    const result = translate(buildSnapshot(objects), header.options, header.dataPlane);
    const actual = goldenText(result);
    const again = goldenText(translate(buildSnapshot(shuffled(objects)), header.options, header.dataPlane));
    assert.equal(again, actual, 'shuffled input order must give byte-identical output');
    // One set of field rules: whatever the translator hands a proxy, the proxy's own validation accepts whole.
    for (const fleet of result.fleets) assert.doesNotThrow(() => validateFleetConfig(structuredClone(fleet)));
    const outFile = join(dir, `${name}.out.yaml`);
    if (process.env.UPDATE_GOLDEN === '1') writeFileSync(outFile, actual);
    assert.equal(actual, readFileSync(outFile, 'utf8'));
  });
}

// Shared by the random-edit tests: the golden inputs as snapshots, the options they translate with, and a
// seeded PRNG so a failing edit sequence replays.
import { readFileSync } from 'node:fs';
import { parseYamlFile } from '../../src/api/load.js';
import { buildSnapshot, type ResourceSnapshot } from '../../src/api/snapshot.js';
import type { TranslateOptions, TranslateResult } from '../../src/translate/index.js';
import { withTestCertificates } from './testdata-certificates.js';

export const options: TranslateOptions = {
  controllerName: 'gateway.portico.io/gatewayclass-controller',
  controllerNamespace: 'portico-gateway-system',
  deployType: 'ControllerNamespace',
};

export const testdata = new URL('./testdata/', import.meta.url);

/** A golden input file (`testdata/<name>`) as a snapshot. */
export function loadTestdata(name: string): ResourceSnapshot {
  const text = withTestCertificates(readFileSync(new URL(name, testdata), 'utf8'));
  return buildSnapshot(parseYamlFile(name, text).objects.map((o) => o.object));
}

/** Small deterministic PRNG (mulberry32). */
export function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** What a translation says (its fleets, statuses and infrastructure), without the hints about how it changed. */
export function translation(result: TranslateResult): Pick<TranslateResult, 'fleets' | 'statuses' | 'infra'> {
  return { fleets: result.fleets, statuses: result.statuses, infra: result.infra };
}

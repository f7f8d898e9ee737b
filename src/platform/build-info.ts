// What build of Portico this process is: the version of the package it was built from (package.json, which ships
// beside `dist` in the image and a checkout alike) and the Node.js that runs it. `portico version` prints it, and
// every /metrics shows it as portico_build_info.
import { readFileSync } from 'node:fs';
import { family } from './prometheus-text.js';

export interface BuildInfo {
  version: string;
  node: string;
}

let cached: BuildInfo | undefined;

export function buildInfo(): BuildInfo {
  if (cached === undefined) {
    let version = 'unknown';
    try {
      const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
        version?: unknown;
      };
      if (typeof pkg.version === 'string') version = pkg.version;
    } catch {
      // A copy of dist without its package.json still runs; it just cannot say its version.
    }
    cached = { version, node: process.version };
  }
  return cached;
}

/** The portico_build_info gauge (always 1, its labels the build), in the Prometheus text format. */
export function buildInfoMetric(): string {
  const { version, node } = buildInfo();
  return family(
    'portico_build_info',
    'gauge',
    'The Portico build and Node.js that run this process (always 1).',
    [[{ version, node }, 1]],
  ).join('\n');
}

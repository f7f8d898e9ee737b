// The conformance report and what makes one worse than another: pure, unit-tested, used by run.ts.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { REPO } from '../toolchain/manifest.js';

export const PROFILE = 'GATEWAY-HTTP';
export const MODES = {
  'controller-namespace': 'ControllerNamespace',
  'gateway-namespace': 'GatewayNamespace',
} as const;
export type Mode = keyof typeof MODES;

export interface ProfileReport {
  name: string;
  core?: { result: string; statistics: { Passed: number; Failed: number; Skipped: number } };
  extended?: {
    result: string;
    statistics: { Passed: number; Failed: number; Skipped: number };
    supportedFeatures?: string[];
    failedTests?: string[];
  };
}

function gatewayApiVersion(): string {
  const mod = readFileSync(join(REPO, 'conformance/go.mod'), 'utf8');
  const version = /sigs\.k8s\.io\/gateway-api (v[^\s]+)/.exec(mod)?.[1];
  if (version === undefined) throw new Error('conformance/go.mod does not require sigs.k8s.io/gateway-api');
  return version;
}

export function reportPath(mode: Mode): string {
  return join(REPO, 'conformance/reports', gatewayApiVersion(), `${mode}.yaml`);
}

export function profileOf(file: string): ProfileReport {
  const report = parse(readFileSync(file, 'utf8')) as { profiles?: ProfileReport[] };
  const profile = report.profiles?.find((p) => p.name === PROFILE);
  if (profile === undefined) throw new Error(`${file}: no ${PROFILE} profile`);
  return profile;
}

/** Why the new report is worse than the committed one (empty when it is not). */
export function regressions(committed: ProfileReport, fresh: ProfileReport): string[] {
  const out: string[] = [];
  if (fresh.core?.result !== 'success') out.push(`core: ${fresh.core?.result ?? 'missing'}`);
  if ((fresh.core?.statistics.Passed ?? 0) < (committed.core?.statistics.Passed ?? 0)) {
    out.push(`core passed ${fresh.core?.statistics.Passed} < ${committed.core?.statistics.Passed} committed`);
  }
  if (fresh.extended !== undefined && fresh.extended.result !== 'success') {
    out.push(`extended: ${fresh.extended.result} (${(fresh.extended.failedTests ?? []).join(', ')})`);
  }
  const claimed = new Set(fresh.extended?.supportedFeatures ?? []);
  for (const f of committed.extended?.supportedFeatures ?? []) {
    if (!claimed.has(f)) out.push(`extended feature ${f} is no longer claimed`);
  }
  return out;
}

// The conformance report and what makes one worse than another: pure, unit-tested, used by run.ts.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { REPO } from '../toolchain/manifest.js';

/** Each profile the suite runs, and the feature whose claim in supportedFeatures puts it in the run. */
const PROFILES = {
  'GATEWAY-HTTP': 'HTTPRoute',
  'GATEWAY-GRPC': 'GRPCRoute',
  'GATEWAY-TLS': 'TLSRoute',
  'GATEWAY-TCP': 'TCPRoute',
  'GATEWAY-UDP': 'UDPRoute',
} as const;

/** The profiles a GatewayClass's supportedFeatures make Portico answer for, in a stable order. */
export function profilesClaimed(supportedFeatures: readonly string[]): string[] {
  const claimed = new Set(supportedFeatures);
  return Object.entries(PROFILES)
    .filter(([, feature]) => claimed.has(feature))
    .map(([profile]) => profile);
}
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

export function profilesOf(file: string): ProfileReport[] {
  const report = parse(readFileSync(file, 'utf8')) as { profiles?: ProfileReport[] };
  if (report.profiles === undefined || report.profiles.length === 0) throw new Error(`${file}: no profile`);
  return report.profiles;
}

/** Why the new report is worse than the committed one, profile by profile: a profile may be added, never dropped. */
export function reportRegressions(committed: ProfileReport[], fresh: ProfileReport[]): string[] {
  const out: string[] = [];
  for (const before of committed) {
    const after = fresh.find((p) => p.name === before.name);
    if (after === undefined) out.push(`${before.name}: no longer run`);
    else for (const r of regressions(before, after)) out.push(`${before.name} ${r}`);
  }
  for (const added of fresh.filter((p) => !committed.some((c) => c.name === p.name))) {
    for (const r of regressions({ name: added.name }, added)) out.push(`${added.name} ${r}`);
  }
  return out;
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

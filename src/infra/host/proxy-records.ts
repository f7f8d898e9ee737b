// What a controller knows about each proxy process it started, one small file per fleet under
// `<state-dir>/proxies/`, written when the process starts and removed when it is gone: the next controller
// (after a crash, or a planned restart) finds its proxies there and adopts them instead of starting new ones.
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fleetInfraName } from '../../ir/fleet-infra.js';
import { type ProxySettings, parseProxySettings } from '../../ir/proxy-settings.js';

export const PROXY_RECORDS_DIR = 'proxies';

export interface ProxyRecord {
  fleet: string;
  address: string;
  pid: number;
  /** /proc start time, when the system has one: proof the pid was not reused. */
  startTime?: string;
  /** The whole command line: what the process was started with, compared again on adoption. */
  argv: string[];
  /** The command line before `args` (node, its options, the entry point); absent in older records. */
  launcher?: string[];
  /** The arguments after the entry point (the supervisor's spec), and where its output goes. */
  args: string[];
  /** The settings the process has now (started with as flags after `args`, or taken in place since). */
  settings?: ProxySettings;
  logFile: string;
}

function recordFile(dir: string, fleet: string): string {
  return join(dir, `${fleetInfraName(fleet)}.json`);
}

/** Written synchronously and atomically: a controller killed right after starting a proxy still left its record. */
export function writeProxyRecord(dir: string, record: ProxyRecord): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = recordFile(dir, record.fleet);
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
  renameSync(temp, file);
}

export function removeProxyRecord(dir: string, fleet: string): void {
  rmSync(recordFile(dir, fleet), { force: true });
}

/** Every readable record; unreadable or malformed files are reported through `onInvalid` and skipped. */
export function readProxyRecords(dir: string, onInvalid: (file: string, why: string) => void): ProxyRecord[] {
  let entries: string[];
  try {
    entries = readdirSync(dir)
      .filter((f) => f.endsWith('.json'))
      .sort();
  } catch {
    return [];
  }
  const out: ProxyRecord[] = [];
  for (const entry of entries) {
    const file = join(dir, entry);
    try {
      const parsed: unknown = JSON.parse(readFileSync(file, 'utf8'));
      if (isProxyRecord(parsed)) out.push(parsed);
      else onInvalid(file, 'not a proxy record');
    } catch (error) {
      onInvalid(file, (error as Error).message);
    }
  }
  return out;
}

function isProxyRecord(value: unknown): value is ProxyRecord {
  if (typeof value !== 'object' || value === null) return false;
  const r = value as Partial<ProxyRecord>;
  const strings = (list: unknown) => Array.isArray(list) && list.every((a) => typeof a === 'string');
  return (
    typeof r.fleet === 'string' &&
    typeof r.address === 'string' &&
    Number.isInteger(r.pid) &&
    (r.pid ?? 0) > 0 &&
    (r.startTime === undefined || typeof r.startTime === 'string') &&
    strings(r.argv) &&
    (r.launcher === undefined || strings(r.launcher)) &&
    strings(r.args) &&
    (r.settings === undefined || validSettings(r.settings)) &&
    typeof r.logFile === 'string'
  );
}

function validSettings(value: unknown): boolean {
  try {
    parseProxySettings(value);
    return true;
  } catch {
    return false;
  }
}

// `portico standalone --stop`: the deliberate stop of everything a state directory runs. The controller (if
// one holds the directory) is stopped first, so nothing restarts the proxies; then every recorded proxy drains
// (SIGTERM), and whichever outlives the grace period is killed.
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DEFAULT_CLAIMS_DIR, openAddressClaims } from '../../infra/host/address-claims.js';
import { isAlive, matchesProcess } from '../../infra/host/process-identity.js';
import {
  PROXY_RECORDS_DIR,
  type ProxyRecord,
  readProxyRecords,
  removeProxyRecord,
} from '../../infra/host/proxy-records.js';
import type { Logger } from '../../platform/log-line.js';
import { lockHolder } from './controller-lock.js';
import { whyNotAdoptable } from './proxy-adoption.js';
import { runsOnAddress } from './state-dir-activity.js';

export interface StopOptions {
  stateDir: string;
  /** The host-wide address claims (the controller's --address-claims-dir): this state dir's are released. */
  claimsDir?: string;
  log: Logger;
  /** SIGTERM to SIGKILL, for the controller and for each proxy (longer than a proxy's maximum drain). */
  graceMs?: number;
}

export const STOP_DEFAULTS = { graceMs: 65_000 };

/** Resolves once everything is gone; returns how many processes were stopped. */
export async function stopStandalone(options: StopOptions): Promise<number> {
  const { stateDir, log } = options;
  const graceMs = options.graceMs ?? STOP_DEFAULTS.graceMs;
  let stopped = 0;
  const controller = lockHolder(stateDir);
  // Only a process proven to be it is signalled: a recorded pid may belong to someone else by now.
  if (controller !== undefined && matchesProcess(controller) === 'yes') {
    log.info(`stopping the controller (pid ${controller.pid})`);
    await terminate([controller.pid], graceMs);
    stopped++;
  } else if (controller !== undefined) {
    log.warn(
      `cannot tell whether pid ${controller.pid} is the controller of ${stateDir} (no /proc): stop it yourself`,
    );
  }
  const recordsDir = join(stateDir, PROXY_RECORDS_DIR);
  const records = readProxyRecords(recordsDir, (file, why) => log.warn(`ignoring ${file}: ${why}`));
  const running: ProxyRecord[] = [];
  for (const r of records) if ((await whyNotAdoptable(r)) === undefined) running.push(r);
  for (const r of running) log.info(`draining proxy ${r.fleet} (pid ${r.pid}) on ${r.address}`);
  await terminate(
    running.map((r) => r.pid),
    graceMs,
  );
  for (const r of records) removeProxyRecord(recordsDir, r.fleet);
  openAddressClaims(options.claimsDir ?? DEFAULT_CLAIMS_DIR, stateDir, runsOnAddress).releaseAll();
  stopped += running.length;
  log.info(stopped === 0 ? `nothing runs from ${stateDir}` : `stopped everything of ${stateDir}`);
  return stopped;
}

async function terminate(pids: number[], graceMs: number): Promise<void> {
  const signal = (pid: number, name: NodeJS.Signals) => {
    try {
      process.kill(pid, name);
    } catch {
      // Gone already.
    }
  };
  for (const pid of pids) signal(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (pids.some(isAlive) && Date.now() < deadline) await sleep(50);
  for (const pid of pids.filter(isAlive)) signal(pid, 'SIGKILL');
  const reaped = Date.now() + 5000;
  while (pids.some(isAlive) && Date.now() < reaped) await sleep(20);
}

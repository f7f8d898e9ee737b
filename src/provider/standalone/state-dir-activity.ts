// Whether a standalone state directory still runs something on an address: its controller (which may start a
// proxy there any moment) or a recorded proxy bound to it. Another controller's address claim is stale otherwise.
import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';
import { matchesProcess } from '../../infra/host/process-identity.js';
import { PROXY_RECORDS_DIR, readProxyRecords } from '../../infra/host/proxy-records.js';
import { lockHolder } from './controller-lock.js';

/** A state directory that is gone runs nothing; one we cannot read is assumed to (never steal blindly). */
export function runsOnAddress(stateDir: string, address: string): boolean {
  try {
    accessSync(stateDir, constants.R_OK | constants.X_OK);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ENOENT';
  }
  if (lockHolder(stateDir) !== undefined) return true;
  const records = readProxyRecords(join(stateDir, PROXY_RECORDS_DIR), () => {});
  return records.some((r) => r.address === address && matchesProcess(r) !== 'no');
}

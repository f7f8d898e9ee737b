// Proxies left running by a controller that died without stopping them (SIGKILL, power loss of the
// terminal) still hold their addresses and ports. The supervisor records its children's pids in a file;
// the next controller stops the ones that are still proxies of ours before starting its own.
import { readFile } from 'node:fs/promises';
import { writeFileAtomic } from '../../write-file-atomic.js';

export interface RecordedProxy {
  fleet: string;
  pid: number;
  /** The script the process was started with: proof that a pid still belongs to one of our proxies. */
  entryPoint: string;
}

/** Serialised writer of the pid file: the latest list always wins, writes never interleave. */
export function createPidFileWriter(file: string): (proxies: RecordedProxy[]) => void {
  let chain: Promise<void> = Promise.resolve();
  return (proxies) => {
    const text = `${JSON.stringify({ proxies }, null, 2)}\n`;
    chain = chain
      .then(() => writeFileAtomic(file, text))
      .catch(() => {
        // Losing this record only weakens orphan clean-up after a crash; never fail supervision for it.
      });
  };
}

export async function readPidFile(file: string): Promise<RecordedProxy[]> {
  try {
    const parsed = JSON.parse(await readFile(file, 'utf8')) as { proxies?: unknown };
    if (!Array.isArray(parsed.proxies)) return [];
    return parsed.proxies.filter(
      (p): p is RecordedProxy =>
        typeof p === 'object' &&
        p !== null &&
        Number.isInteger((p as RecordedProxy).pid) &&
        typeof (p as RecordedProxy).entryPoint === 'string' &&
        typeof (p as RecordedProxy).fleet === 'string',
    );
  } catch {
    return [];
  }
}

/**
 * Stops recorded proxies that are still running (SIGTERM, SIGKILL after `graceMs`). A pid is touched only
 * when its command line (Linux `/proc`) still names the recorded entry point, so a reused pid is safe;
 * where that cannot be checked, nothing is killed. Returns the proxies stopped.
 */
export async function stopOrphanProxies(file: string, graceMs = 5000): Promise<RecordedProxy[]> {
  const stopped: RecordedProxy[] = [];
  for (const proxy of await readPidFile(file)) {
    if (proxy.pid === process.pid || !(await isOurProxy(proxy))) continue;
    try {
      process.kill(proxy.pid, 'SIGTERM');
    } catch {
      continue;
    }
    stopped.push(proxy);
  }
  const deadline = Date.now() + graceMs;
  for (const proxy of stopped) {
    while (isAlive(proxy.pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    if (isAlive(proxy.pid)) {
      try {
        process.kill(proxy.pid, 'SIGKILL');
      } catch {
        // It exited in between.
      }
    }
  }
  return stopped;
}

async function isOurProxy(proxy: RecordedProxy): Promise<boolean> {
  try {
    const argv = (await readFile(`/proc/${proxy.pid}/cmdline`, 'utf8')).split('\0');
    return argv.includes(proxy.entryPoint);
  } catch {
    return false;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

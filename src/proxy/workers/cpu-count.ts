// How many CPUs this process may use: the cgroup CPU quota when one is set (a container's CPU limit), else
// the CPUs of its affinity mask. A pod limited to 2 CPUs on a 64-core node gets 2 workers, not 64.
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** The quota in CPUs from cgroup v2's `cpu.max` ("max 100000" or "200000 100000"), if limited. */
export function quotaFromCpuMax(text: string | undefined): number | undefined {
  const [quota, period] = (text ?? '').split(/\s+/);
  if (quota === undefined || quota === 'max' || period === undefined) return undefined;
  const q = Number(quota);
  const p = Number(period);
  return q > 0 && p > 0 ? q / p : undefined;
}

/** The quota in CPUs from cgroup v1's `cpu.cfs_quota_us` (-1: none) and `cpu.cfs_period_us`, if limited. */
export function quotaFromCfs(quota: string | undefined, period: string | undefined): number | undefined {
  const q = Number(quota);
  const p = Number(period);
  return Number.isFinite(q) && q > 0 && p > 0 ? q / p : undefined;
}

/** This process's cgroup path in the hierarchy that has `controller` (v1), or the unified one (v2: ""). */
function cgroupPath(controller: string | undefined): string | undefined {
  for (const line of (readText('/proc/self/cgroup') ?? '').split('\n')) {
    const [, controllers, path] = line.split(':');
    if (path === undefined) continue;
    if (controller === undefined ? controllers === '' : controllers?.split(',').includes(controller))
      return path;
  }
  return undefined;
}

/** The CPU quota of this process's cgroup (v2, then v1), in CPUs; undefined when there is none. */
export function cgroupCpuQuota(root = '/sys/fs/cgroup'): number | undefined {
  const v2 = cgroupPath(undefined);
  if (v2 !== undefined) {
    const quota = quotaFromCpuMax(readText(`${root}${v2}/cpu.max`) ?? readText(`${root}/cpu.max`));
    if (quota !== undefined) return quota;
  }
  const v1 = cgroupPath('cpu');
  if (v1 !== undefined) {
    for (const dir of [
      `${root}/cpu${v1}`,
      `${root}/cpu,cpuacct${v1}`,
      `${root}/cpu`,
      `${root}/cpu,cpuacct`,
    ]) {
      const quota = quotaFromCfs(readText(`${dir}/cpu.cfs_quota_us`), readText(`${dir}/cpu.cfs_period_us`));
      if (quota !== undefined) return quota;
    }
  }
  return undefined;
}

/** Workers by default: the CPU quota rounded up (a 1.5-CPU limit gets 2), capped by the affinity mask; ≥ 1. */
export function defaultWorkerCount(): number {
  const cpus = availableParallelism();
  const quota = cgroupCpuQuota();
  return Math.max(1, quota === undefined ? cpus : Math.min(cpus, Math.ceil(quota)));
}

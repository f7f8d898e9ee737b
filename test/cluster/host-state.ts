// What a cluster could leave on the host, read so a test can compare before and after: processes, mounts,
// network namespaces, interfaces, routes, iptables rules, cgroups, temp files, slot locks and sysctls.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cacheDir } from '../../toolchain/manifest.js';
import { cgroupMounts } from './node-host.js';

export type HostState = Record<string, string[]>;

function lines(command: string, args: string[]): string[] {
  const r = spawnSync(command, args, { encoding: 'utf8' });
  return (r.stdout ?? '')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
}

/** Command lines of processes started from the toolchain cache or naming a cluster directory. */
function clusterProcesses(): string[] {
  const out: string[] = [];
  const cache = cacheDir();
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
      if (cmd.includes(cache) || cmd.includes('portico-cluster-') || cmd.includes('portico-k8s-')) {
        out.push(`${pid} ${cmd.slice(0, 200)}`);
      }
    } catch {
      // Exited meanwhile.
    }
  }
  return out;
}

export function hostState(): HostState {
  const sysctls = ['vm/overcommit_memory', 'kernel/panic', 'kernel/panic_on_oops', 'vm/panic_on_oom'];
  return {
    processes: clusterProcesses(),
    mounts: readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .map((l) => l.split(' ')[4] ?? '')
      .filter((m) => m !== '')
      .sort(),
    netns: lines('ip', ['netns', 'list']),
    links: lines('ip', ['-o', 'link', 'show']).map((l) => l.split(':')[1]?.trim() ?? l),
    routes: [...lines('ip', ['route', 'show']), ...lines('ip', ['-6', 'route', 'show'])],
    iptables: lines('iptables-save', []).filter((l) => !l.startsWith('#')),
    cgroups: cgroupMounts().flatMap((m) => readdirSync(m).filter((d) => d.startsWith('portico-k8s-'))),
    tmp: readdirSync(tmpdir()).filter((f) => f.startsWith('portico-cluster-')),
    locks: existsSync('/run/portico-test-clusters') ? readdirSync('/run/portico-test-clusters') : [],
    sysctls: sysctls.map((k) => `${k}=${readFileSync(join('/proc/sys', k), 'utf8').trim()}`),
  };
}

/** What differs between two states, as readable lines (empty when nothing was left behind). */
export function stateDifference(before: HostState, after: HostState): string[] {
  const out: string[] = [];
  for (const key of Object.keys(before)) {
    const was = new Set(before[key]);
    const now = new Set(after[key]);
    for (const item of now) if (!was.has(item)) out.push(`${key}: left ${item}`);
    for (const item of was) if (!now.has(item)) out.push(`${key}: removed ${item}`);
  }
  return out;
}

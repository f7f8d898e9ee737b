// What a cluster could leave on the host, read so a test can compare before and after: processes, mounts,
// network namespaces, interfaces, routes, iptables rules, cgroups, files under /run, temp files, slot locks
// and sysctls.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { cacheDir } from '../../toolchain/manifest.js';
import { mountPoints, NODE_PRIVATE_DIRS } from './host-baseline.js';
import { cgroupMounts } from './node-host.js';

export type HostState = Record<string, string[]>;

function lines(command: string, args: string[]): string[] {
  const r = spawnSync(command, args, { encoding: 'utf8' });
  return (r.stdout ?? '')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
}

/** What a cluster runs from the toolchain cache; helm, kubectl and the image's Node are clients that other
 * test phases running beside a cluster test use too. */
const SERVER_DIRS = ['containerd', 'coredns', 'etcd', 'pause', 'runc'];
const KUBERNETES_SERVERS = /\/kube-(apiserver|controller-manager|scheduler|proxy)\b|\/kubelet\b/;

/** Command lines of cluster components started from the toolchain cache or naming a cluster directory. */
function clusterProcesses(): string[] {
  const out: string[] = [];
  const cache = cacheDir();
  const servers = SERVER_DIRS.map((d) => join(cache, d));
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
      const fromCache =
        servers.some((d) => cmd.includes(d)) ||
        (cmd.includes(join(cache, 'kubernetes')) && KUBERNETES_SERVERS.test(cmd));
      // The image test (test/toolchain/portico-image.test.ts) runs its own containerd from the cache, beside a
      // cluster test, in a directory of its own: not a cluster's.
      if (cmd.includes('portico-image-')) continue;
      if (fromCache || cmd.includes('portico-cluster-') || cmd.includes('portico-k8s-')) {
        out.push(`${pid} ${cmd.slice(0, 200)}`);
      }
    } catch {
      // Exited meanwhile.
    }
  }
  return out;
}

/** `dir` and everything below it, as paths. */
function treeOf(dir: string): string[] {
  const out = [dir];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...treeOf(path));
    else out.push(path);
  }
  return out;
}

export function hostState(): HostState {
  const sysctls = ['vm/overcommit_memory', 'kernel/panic', 'kernel/panic_on_oops', 'vm/panic_on_oom'];
  return {
    processes: clusterProcesses(),
    mounts: mountPoints().sort(),
    netns: lines('ip', ['netns', 'list']),
    links: lines('ip', ['-o', 'link', 'show']).map((l) => l.split(':')[1]?.trim() ?? l),
    routes: [...lines('ip', ['route', 'show']), ...lines('ip', ['-6', 'route', 'show'])],
    iptables: lines('iptables-save', []).filter((l) => !l.startsWith('#')),
    // Every top-level group, not only ours: the kubelet would make `kubepods` here if it missed its root.
    cgroups: cgroupMounts().flatMap((m) =>
      readdirSync(m, { withFileTypes: true })
        .filter((d) => d.isDirectory())
        .map((d) => `${m}/${d.name}`),
    ),
    run: readdirSync('/run').sort(),
    // The node writes here through its private tmpfs only; ~/.kube is where kubectl would cache discovery.
    files: [...NODE_PRIVATE_DIRS, join(homedir(), '.kube')].flatMap((d) => (existsSync(d) ? treeOf(d) : [])),
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

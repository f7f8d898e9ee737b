// What the first cluster of a series finds on the machine, so the last one to stop can put it back: the
// machine-wide sysctls the kubelet changes, what the first network namespace creates under /run, and the
// directories the node hides its own tmpfs behind. On a machine that never ran a cluster, /run/netns is not
// yet a mount point: the first `ip netns add` makes it a shared bind mount of itself, and deleting the
// namespace leaves that mount behind.
import { spawnSync } from 'node:child_process';
import {
  closeSync,
  existsSync,
  openSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';

/** Machine-wide sysctls the kubelet sets at start (its "kernel tunables"). */
const KUBELET_SYSCTLS = [
  'vm/overcommit_memory',
  'vm/panic_on_oom',
  'kernel/panic',
  'kernel/panic_on_oops',
  'kernel/keys/root_maxkeys',
  'kernel/keys/root_maxbytes',
];

export const NETNS_DIR = '/run/netns';
/**
 * Where the node's programs write on the host's file systems whatever their configuration: the CNI plugins'
 * result cache, the kubelet's device-plugin socket (a fixed path outside its --root-dir) and libmount's table
 * (the kubelet mounts volumes with mount(8)). The node mounts a private tmpfs on each (node-host.ts), so what
 * is written there dies with it; on the host only the empty directory is left, removed at the end if the
 * series made it.
 */
export const NODE_PRIVATE_DIRS = ['/var/lib/cni', '/var/lib/kubelet', '/run/mount'];

type DirState = 'absent' | 'directory' | 'mount point';

interface HostBaseline {
  sysctls: Record<string, string>;
  netnsDir: DirState;
  /** Those of NODE_PRIVATE_DIRS that existed. */
  privateDirs: string[];
}

/** Mount points of this process's mount namespace, in mount order (a path mounted twice is listed twice). */
export function mountPoints(): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4] ?? '')
    .filter((m) => m !== '');
}

function dirState(path: string): DirState {
  if (!existsSync(path)) return 'absent';
  return mountPoints().includes(path) ? 'mount point' : 'directory';
}

/** Records the machine as found, once per series: the first cluster writes it, before it changes anything. */
export function saveHostBaseline(file: string): void {
  const baseline: HostBaseline = {
    sysctls: Object.fromEntries(
      KUBELET_SYSCTLS.map((k) => [k, readFileSync(`/proc/sys/${k}`, 'utf8').trim()]),
    ),
    netnsDir: dirState(NETNS_DIR),
    privateDirs: NODE_PRIVATE_DIRS.filter((d) => existsSync(d)),
  };
  let fd: number;
  try {
    fd = openSync(file, 'wx');
  } catch (error) {
    // Another cluster of the series recorded it first (or a dead series did: the machine as it was then).
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return;
    throw error;
  }
  writeSync(fd, JSON.stringify(baseline));
  closeSync(fd);
}

/** Undoes /run/netns's mount (and directory) if a cluster made them and no namespace of anyone lives there. */
function restoreNetnsDir(was: DirState): void {
  if (was === 'mount point' || !existsSync(NETNS_DIR) || readdirSync(NETNS_DIR).length > 0) return;
  // -n: libmount would otherwise create /run/mount for its table, another thing left behind.
  for (let i = 0; i < 4 && mountPoints().includes(NETNS_DIR); i++) {
    spawnSync('umount', ['-n', NETNS_DIR], { stdio: 'ignore' });
  }
  if (was === 'absent' && !mountPoints().includes(NETNS_DIR)) {
    try {
      rmdirSync(NETNS_DIR);
    } catch {
      // A namespace was added meanwhile.
    }
  }
}

/** Puts the machine back as the first cluster found it; run by the last cluster to stop. */
export function restoreHostBaseline(file: string): void {
  if (!existsSync(file)) return;
  const baseline = JSON.parse(readFileSync(file, 'utf8')) as HostBaseline;
  for (const [key, value] of Object.entries(baseline.sysctls)) writeFileSync(`/proc/sys/${key}`, value);
  restoreNetnsDir(baseline.netnsDir);
  for (const dir of NODE_PRIVATE_DIRS) {
    if (baseline.privateDirs.includes(dir)) continue;
    try {
      rmdirSync(dir);
    } catch {
      // Gone already, or something else of the machine wrote into it since: not ours to remove.
    }
  }
  rmSync(file);
}

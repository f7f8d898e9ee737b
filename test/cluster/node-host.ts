// The machine the cluster's node is: a network namespace joined to the host by a veth pair, a private mount
// namespace (every mount the kubelet and containerd make lives and dies there), and a cgroup subtree that
// holds every process of the cluster — components, shims and containers — so stop() can find them all.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { NODE_PRIVATE_DIRS } from './host-baseline.js';

export interface NodeAddresses {
  /** Slot number: picks every name and range below, so clusters side by side never collide. */
  slot: number;
  netns: string;
  hostLink: string;
  hostIp: string;
  nodeIp: string;
  /** Pods (the node's share is podCidr), Services, and LoadBalancer addresses: all routed from the host. */
  clusterCidr: string;
  podCidr: string;
  serviceCidr: string;
  kubernetesServiceIp: string;
  dnsServiceIp: string;
  lbCidr: string;
  /** The cgroup path under every hierarchy: the kubelet's cgroupRoot, plus `system` for the components. */
  cgroupRoot: string;
}

export function nodeAddresses(slot: number): NodeAddresses {
  const pods = 244 - slot;
  const services = 96 + slot;
  return {
    slot,
    netns: `portico-k8s-${slot}`,
    hostLink: `pk8s${slot}`,
    hostIp: `10.200.${slot}.1`,
    nodeIp: `10.200.${slot}.2`,
    clusterCidr: `10.${pods}.0.0/16`,
    podCidr: `10.${pods}.0.0/24`,
    serviceCidr: `10.${services}.0.0/16`,
    kubernetesServiceIp: `10.${services}.0.1`,
    dnsServiceIp: `10.${services}.0.10`,
    lbCidr: `10.201.${slot}.0/24`,
    cgroupRoot: `portico-k8s-${slot}`,
  };
}

/** What the host routes to the node: tests reach pods, ClusterIPs and load balancers as a machine on the LAN would. */
function routedCidrs(a: NodeAddresses): string[] {
  return [a.clusterCidr, a.serviceCidr, a.lbCidr];
}

function ip(args: string[]): void {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

function ipQuiet(args: string[]): boolean {
  return spawnSync('ip', args, { stdio: 'ignore' }).status === 0;
}

function inNetns(a: NodeAddresses, command: string, args: string[]): void {
  execFileSync('ip', ['netns', 'exec', a.netns, command, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
}

function sysctl(a: NodeAddresses, key: string, value: string): void {
  inNetns(a, 'sysctl', ['-q', '-w', `${key}=${value}`]);
}

/** The node's network: no default route anywhere, so nothing a pod sends can leave the machine. */
export function createNetwork(a: NodeAddresses): void {
  ip(['netns', 'add', a.netns]);
  ip(['link', 'add', a.hostLink, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', a.netns]);
  ip(['addr', 'add', `${a.hostIp}/24`, 'dev', a.hostLink]);
  ip(['link', 'set', a.hostLink, 'up']);
  inNetns(a, 'ip', ['addr', 'add', `${a.nodeIp}/24`, 'dev', 'eth0']);
  inNetns(a, 'ip', ['link', 'set', 'eth0', 'up']);
  inNetns(a, 'ip', ['link', 'set', 'lo', 'up']);
  for (const cidr of routedCidrs(a)) ip(['route', 'add', cidr, 'via', a.nodeIp, 'dev', a.hostLink]);
  sysctl(a, 'net.ipv4.ip_forward', '1');
  sysctl(a, 'net.bridge.bridge-nf-call-iptables', '1');
  sysctl(a, 'net.bridge.bridge-nf-call-ip6tables', '1');
  // Pods may answer the host but never open connections toward it: the host's own services are not theirs.
  inNetns(a, 'iptables', [
    '-w',
    '-I',
    'FORWARD',
    '-i',
    'cni0',
    '-o',
    'eth0',
    '-m',
    'conntrack',
    '--ctstate',
    'NEW',
    '-j',
    'REJECT',
  ]);
}

/** Deleting the namespace takes the node end of the veth, and with it the host end and its routes. */
export function removeNetwork(a: NodeAddresses): void {
  for (const cidr of routedCidrs(a)) ipQuiet(['route', 'del', cidr]);
  ipQuiet(['link', 'del', a.hostLink]);
  ipQuiet(['netns', 'del', a.netns]);
}

/** Every cgroup v1/v2 mount point of the host. */
export function cgroupMounts(): string[] {
  const out = new Set<string>();
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const [left, right] = line.split(' - ');
    if (left === undefined || right === undefined) continue;
    const fstype = right.split(' ')[0];
    if (fstype === 'cgroup' || fstype === 'cgroup2') out.add(left.split(' ')[4] ?? '');
  }
  out.delete('');
  return [...out];
}

function pidsHierarchy(): string {
  const mount = cgroupMounts().find((m) => m.endsWith('/pids'));
  if (mount === undefined)
    throw new Error('no cgroup v1 pids hierarchy: the cluster needs it to track its processes');
  return mount;
}

/** The cgroup root in every hierarchy (the kubelet insists it exists), and `system` for the components. */
export function createCgroups(a: NodeAddresses): string {
  for (const mount of cgroupMounts()) {
    for (const path of [join(mount, a.cgroupRoot), join(mount, a.cgroupRoot, 'system')]) {
      if (!existsSync(path)) execFileSync('mkdir', ['-p', path]);
      if (mount.endsWith('/cpuset')) {
        // A new cpuset cgroup starts empty and admits no process until it has CPUs and memory nodes.
        for (const file of ['cpuset.cpus', 'cpuset.mems']) {
          writeFileSync(join(path, file), readFileSync(join(mount, file), 'utf8'));
        }
      }
    }
  }
  return join(pidsHierarchy(), a.cgroupRoot, 'system');
}

function descendants(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) out.push(...descendants(join(dir, entry.name)), join(dir, entry.name));
  }
  return out;
}

/** Process ids in the cluster's pids subtree. */
export function clusterPids(a: NodeAddresses): number[] {
  const root = join(pidsHierarchy(), a.cgroupRoot);
  if (!existsSync(root)) return [];
  const pids: number[] = [];
  for (const dir of [...descendants(root), root]) {
    const procs = join(dir, 'cgroup.procs');
    if (!existsSync(procs)) continue;
    for (const line of readFileSync(procs, 'utf8').split('\n')) if (line !== '') pids.push(Number(line));
  }
  return pids;
}

/** SIGKILLs everything in the subtree until it is empty (processes may fork meanwhile), then removes it. */
export async function removeCgroups(a: NodeAddresses, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pids = clusterPids(a);
    if (pids.length === 0) break;
    if (Date.now() > deadline)
      throw new Error(`processes ${pids.join(' ')} survive in cgroup ${a.cgroupRoot}`);
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  for (const mount of cgroupMounts()) {
    const root = join(mount, a.cgroupRoot);
    if (!existsSync(root)) continue;
    for (const dir of [...descendants(root), root]) {
      // A cgroup whose last process just exited can be busy for a moment.
      for (let i = 0; ; i++) {
        try {
          rmdirSync(dir);
          break;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'ENOENT') break;
          if (i >= 100) throw error;
          await new Promise((r) => setTimeout(r, 50));
        }
      }
    }
  }
}

/**
 * Starts the process that holds the node's mount namespace: it joins the cluster's cgroup, enters the network
 * namespace, and unshares a mount namespace in which host mounts still appear but the node's own never leave
 * (with a tmpfs of its own on each NODE_PRIVATE_DIRS).
 */
export async function startHolder(a: NodeAddresses, systemCgroup: string): Promise<number> {
  for (const dir of NODE_PRIVATE_DIRS) mkdirSync(dir, { recursive: true });
  const holder = spawn(
    'nsenter',
    [
      `--net=/run/netns/${a.netns}`,
      '--',
      'unshare',
      '--mount',
      '--propagation',
      'slave',
      '--',
      'sh',
      '-c',
      // -n: no libmount table written; then the node's own tmpfs where its programs would write on the host.
      `${NODE_PRIVATE_DIRS.map((d) => `mount -n -t tmpfs portico-node ${d}`).join(' && ')} && exec sleep infinity`,
    ],
    { stdio: 'ignore', detached: true },
  );
  const pid = holder.pid;
  if (pid === undefined) throw new Error('cannot start the node namespace holder');
  writeFileSync(join(systemCgroup, 'cgroup.procs'), String(pid));
  holder.unref();
  // The namespaces exist once sleep runs: unshare has replaced itself by then.
  const deadline = Date.now() + 5000;
  while (Date.now() < deadline) {
    const comm = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
    if (comm === 'sleep') return pid;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('the node namespace holder did not start');
}

/**
 * The command that runs a program inside the node (its network and mount namespaces), after moving itself into
 * the cluster's cgroup so stop() finds it and whatever it starts.
 */
export function nodeCommand(
  holderPid: number,
  systemCgroup: string,
  command: string,
  args: string[],
): [string, string[]] {
  const enter = ['nsenter', '--target', String(holderPid), '--mount', '--net', '--', command, ...args];
  return ['sh', ['-c', 'echo $$ > "$0" && exec "$@"', join(systemCgroup, 'cgroup.procs'), ...enter]];
}

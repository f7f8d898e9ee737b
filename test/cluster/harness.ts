// startCluster(): a real single-node Kubernetes on this machine — etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, containerd with runc and the CNI bridge, kubelet, kube-proxy and CoreDNS — all inside one
// network and mount namespace of their own, with the toolchain's images imported. stop() leaves nothing behind.
// attachCluster(dir) gives another process (a test file) the same handle, minus stop().
import { execFileSync, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isAlive } from '../../src/infra/host/process-identity.js';
import { binary, type Manifest, REPO, readManifest } from '../../toolchain/manifest.js';
import {
  ClusterStartError,
  type Component,
  type ComponentHost,
  type ComponentSpec,
  startComponent,
  waitReady,
} from './component.js';
import {
  API_PORT,
  apiServerArgs,
  containerdPaths,
  controllerManagerArgs,
  etcdArgs,
  kubeletArgs,
  type Layout,
  NODE_NAME,
  schedulerArgs,
  writeCniConfig,
  writeContainerdConfig,
  writeKubeletConfig,
  writeKubeProxyConfig,
} from './components.js';
import { restoreHostBaseline, saveHostBaseline } from './host-baseline.js';
import { type ApiEndpoint, asList, call, eventually } from './kube-api.js';
import { type LoadBalancerController, startLoadBalancerController } from './load-balancer.js';
import {
  createCgroups,
  createNetwork,
  type NodeAddresses,
  nodeAddresses,
  removeCgroups,
  removeNetwork,
  startHolder,
} from './node-host.js';
import { createPki, writeKubeconfig } from './pki.js';
import { claimSlot, HOST_BASELINE_FILE, releaseSlot, type SlotOwner } from './slots.js';

export interface ClusterOptions {
  /** Also write the admin kubeconfig here (kept after stop). */
  kubeconfigPath?: string;
  /** Progress lines; silent by default. */
  log?: (line: string) => void;
  /** Gateway API standard CRDs and Portico's DataPlaneProxy CRD (default true). */
  crds?: boolean;
  /** Aborting it (Ctrl-C while starting) stops the start and removes what it made. */
  signal?: AbortSignal;
  /** More flags for a component, by name (e.g. a feature gate to try). */
  extraArgs?: Record<string, string[]>;
}

/** What another process needs to use the cluster: written to <dir>/cluster.json, updated on restarts. */
interface ClusterState {
  dir: string;
  kubeconfigPath: string;
  slot: number;
  host: ComponentHost;
  endpoint: ApiEndpoint;
  components: Record<string, { pid: number; spec: ComponentSpec }>;
}

export interface Cluster extends ApiEndpoint {
  dir: string;
  /** The admin kubeconfig (inside `dir` unless `kubeconfigPath` was given). */
  kubeconfigPath: string;
  addresses: NodeAddresses;
  nodeName: string;
  toolchain: Manifest;
  /** Component names: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, containerd, kubelet, kube-proxy. */
  components(): string[];
  /** The component's log file. */
  logOf(name: string): string;
  /** Runs the toolchain's kubectl as the admin; throws with its stderr on failure. */
  kubectl(args: string[], input?: string): string;
  /** Runs ctr against the node's containerd (namespace k8s.io); throws with its stderr on failure. */
  ctr(args: string[]): string;
  /** Kills a component and starts it again with the same flags; resolves once the API server answers again. */
  restart(name: string): Promise<void>;
  /** Freezes a component (SIGSTOP) until the returned function resumes it (SIGCONT). */
  pause(name: string): () => void;
  /** Stops the cluster and removes everything it made; only the process that started it may. */
  stop(): Promise<void>;
}

const START_TIMEOUT_MS = 120_000;
const STATE_FILE = 'cluster.json';

/** Everything a slot owns, torn down in the order that lets each step succeed. */
async function teardown(a: NodeAddresses, dir: string): Promise<void> {
  await removeCgroups(a);
  removeNetwork(a);
  rmSync(dir, { recursive: true, force: true });
}

async function sweepStale(slot: number, owner: SlotOwner): Promise<void> {
  await teardown(nodeAddresses(slot), owner.dir);
}

/** A slot whose namespace, link or routes exist without our lock belongs to someone else. */
function slotOccupied(slot: number): boolean {
  const a = nodeAddresses(slot);
  return existsSync(`/run/netns/${a.netns}`) || existsSync(`/sys/class/net/${a.hostLink}`);
}

function requireRoot(): void {
  if (process.getuid?.() !== 0) {
    throw new Error('the test cluster needs root (network namespaces, cgroups, containerd); run as root');
  }
}

function writeState(state: ClusterState): void {
  const path = join(state.dir, STATE_FILE);
  writeFileSync(`${path}.tmp`, JSON.stringify(state, null, 2));
  renameSync(`${path}.tmp`, path);
}

function readState(dir: string): ClusterState {
  return JSON.parse(readFileSync(join(dir, STATE_FILE), 'utf8')) as ClusterState;
}

async function apiReady(endpoint: ApiEndpoint): Promise<boolean> {
  return (await call(endpoint, 'GET', '/readyz', undefined, { timeoutMs: 2000 })).status === 200;
}

/** The handle, for the process that started the cluster (`stop` given) or one that attached to it. */
function handle(dir: string, toolchain: Manifest, stop: () => Promise<void>): Cluster {
  const initial = readState(dir);
  const a = nodeAddresses(initial.slot);
  const kubeconfig = join(dir, 'admin.kubeconfig');
  const component = (name: string) => {
    const c = readState(dir).components[name];
    if (c === undefined) throw new Error(`no cluster component ${name}`);
    return c;
  };
  return {
    ...initial.endpoint,
    dir,
    kubeconfigPath: initial.kubeconfigPath,
    addresses: a,
    nodeName: NODE_NAME,
    toolchain,
    components: () => Object.keys(readState(dir).components),
    logOf: (name) => join(dir, `${name}.log`),
    kubectl(args, input) {
      const cacheDir = join(dir, 'kube-cache');
      const result = spawnSync(
        binary(toolchain, 'kubectl'),
        ['--kubeconfig', kubeconfig, '--cache-dir', cacheDir, ...args],
        {
          encoding: 'utf8',
          input,
        },
      );
      if (result.status !== 0)
        throw new Error(`kubectl ${args.join(' ')}: ${result.stderr || result.stdout}`);
      return result.stdout;
    },
    ctr(args) {
      const socket = join(dir, 'containerd', 'containerd.sock');
      const result = spawnSync(
        binary(toolchain, 'ctr'),
        ['--address', socket, '--namespace', 'k8s.io', ...args],
        {
          encoding: 'utf8',
        },
      );
      if (result.status !== 0) throw new Error(`ctr ${args.join(' ')}: ${result.stderr || result.stdout}`);
      return result.stdout;
    },
    async restart(name) {
      const { pid, spec } = component(name);
      if (isAlive(pid)) process.kill(pid, 'SIGKILL');
      await eventually(async () => (isAlive(pid) ? undefined : true), `${name} to exit`, 10_000, 20);
      const next = startComponent(readState(dir).host, spec);
      const state = readState(dir);
      state.components[name] = { pid: next.pid, spec };
      writeState(state);
      await waitReady(next, () => apiReady(initial.endpoint), START_TIMEOUT_MS, 'serving again');
    },
    pause(name) {
      const { pid } = component(name);
      process.kill(pid, 'SIGSTOP');
      return () => process.kill(pid, 'SIGCONT');
    },
    stop,
  };
}

/** A cluster another process started (its directory, e.g. from PORTICO_TEST_CLUSTER). */
export function attachCluster(dir: string): Cluster {
  return handle(dir, readManifest(), async () => {
    throw new Error(`the cluster in ${dir} belongs to the process that started it`);
  });
}

export async function startCluster(options: ClusterOptions = {}): Promise<Cluster> {
  requireRoot();
  const log = options.log ?? (() => {});
  const signal = options.signal;
  const toolchain = readManifest();
  const dir = mkdtempSync(join(tmpdir(), 'portico-cluster-'));
  const slot = await claimSlot(dir, sweepStale, slotOccupied);
  const a = nodeAddresses(slot);
  let lb: LoadBalancerController | undefined;
  let stopped = false;

  const stop = async () => {
    if (stopped) return;
    stopped = true;
    lb?.stop();
    await teardown(a, dir);
    releaseSlot(slot, () => restoreHostBaseline(HOST_BASELINE_FILE));
  };

  try {
    const started = Date.now();
    const since = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;
    // Before the first namespace, iptables call or kubelet of the series changes the machine.
    saveHostBaseline(HOST_BASELINE_FILE);
    createNetwork(a);
    const systemCgroup = createCgroups(a);
    const holderPid = await startHolder(a, systemCgroup);
    const host: ComponentHost = { holderPid, systemCgroup, logDir: dir };
    const pki = createPki({
      dir: join(dir, 'pki'),
      nodeName: NODE_NAME,
      nodeIp: a.nodeIp,
      apiServerIps: [a.nodeIp, '127.0.0.1', a.kubernetesServiceIp],
    });
    const kubeconfigs: Record<string, string> = {};
    for (const [name, identity] of Object.entries(pki.clients)) {
      kubeconfigs[name] = join(dir, `${name}.kubeconfig`);
      // The components run inside the node and reach the API server on its loopback.
      const server = name === 'admin' ? `https://${a.nodeIp}:${API_PORT}` : `https://127.0.0.1:${API_PORT}`;
      writeKubeconfig(kubeconfigs[name], server, pki.caCert, identity, name);
    }
    let kubeconfigPath = kubeconfigs.admin!;
    if (options.kubeconfigPath !== undefined) {
      copyFileSync(kubeconfigs.admin!, options.kubeconfigPath);
      kubeconfigPath = options.kubeconfigPath;
    }
    const layout: Layout = { dir, a, pki, kubeconfigs };
    const state: ClusterState = {
      dir,
      kubeconfigPath,
      slot,
      host,
      endpoint: {
        server: `https://${a.nodeIp}:${API_PORT}`,
        caPem: readFileSync(pki.caCert, 'utf8'),
        adminCertPem: readFileSync(pki.clients.admin!.cert, 'utf8'),
        adminKeyPem: readFileSync(pki.clients.admin!.key, 'utf8'),
      },
      components: {},
    };
    const endpoint = state.endpoint;
    const run = (name: string, bin: string, args: string[], env: Record<string, string> = {}) => {
      const spec: ComponentSpec = {
        name,
        command: binary(toolchain, bin),
        args: [...args, ...(options.extraArgs?.[name] ?? [])],
        env,
      };
      const c: Component = startComponent(host, spec);
      state.components[name] = { pid: c.pid, spec };
      writeState(state);
      return c;
    };

    log('starting etcd and kube-apiserver');
    const etcd = run('etcd', 'etcd', etcdArgs(layout));
    const apiserver = run('kube-apiserver', 'kube-apiserver', apiServerArgs(layout));
    await waitReady(
      apiserver,
      async () => {
        if (etcd.exit !== undefined) await waitReady(etcd, async () => false, 0);
        return apiReady(endpoint);
      },
      START_TIMEOUT_MS,
      'ready',
      signal,
    );
    log(`kube-apiserver ready after ${since()}`);

    run('kube-controller-manager', 'kube-controller-manager', controllerManagerArgs(layout));
    run('kube-scheduler', 'kube-scheduler', schedulerArgs(layout));

    const cd = containerdPaths(layout);
    const binDir = join(binary(toolchain, 'containerd'), '..');
    const containerd = run(
      'containerd',
      'containerd',
      ['--config', writeContainerdConfig(layout, binary(toolchain, 'runc'))],
      // containerd finds its shim on PATH.
      { PATH: `${binDir}:/usr/sbin:/usr/bin:/sbin:/bin` },
    );
    const ctr = (args: string[]) =>
      execFileSync(binary(toolchain, 'ctr'), ['--address', cd.socket, '--namespace', 'k8s.io', ...args], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    await waitReady(
      containerd,
      async () => {
        ctr(['version']);
        return true;
      },
      30_000,
      'ready',
      signal,
    );
    log('importing images');
    for (const image of Object.values(toolchain.images)) ctr(['images', 'import', image.archive]);
    writeCniConfig(layout);
    writeKubeletConfig(layout);
    const kubelet = run('kubelet', 'kubelet', kubeletArgs(layout));
    await waitReady(
      kubelet,
      async () => {
        const node = await call(endpoint, 'GET', `/api/v1/nodes/${NODE_NAME}`);
        return asList(node.body.status?.conditions).some((c) => c.type === 'Ready' && c.status === 'True');
      },
      START_TIMEOUT_MS,
      'Ready',
      signal,
    );
    log(`node Ready after ${since()}`);
    const proxy = run('kube-proxy', 'kube-proxy', [`--config=${writeKubeProxyConfig(layout)}`, '--v=1']);
    lb = startLoadBalancerController(endpoint, a.lbCidr, log);

    const cluster = handle(dir, toolchain, stop);
    const dns = readFileSync(join(REPO, 'test/cluster/addons/coredns.yaml'), 'utf8');
    cluster.kubectl(['apply', '--server-side', '-f', '-'], dns.replaceAll('DNS_SERVICE_IP', a.dnsServiceIp));
    if (options.crds !== false) {
      for (const d of [toolchain.files.gatewayApiCrds, join(REPO, 'charts/gateway-helm/crds')]) {
        cluster.kubectl(['apply', '--server-side', '-f', d]);
      }
      cluster.kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd', '--all']);
    }
    await waitReady(
      proxy,
      async () => (await fetch(`http://${a.nodeIp}:10256/healthz`).catch(() => undefined))?.status === 200,
      60_000,
      'ready',
      signal,
    );
    // CoreDNS is the first pod: it proves the kubelet, containerd, runc and the pod network together.
    await waitReady(
      kubelet,
      async () => {
        const d = await call(endpoint, 'GET', '/apis/apps/v1/namespaces/kube-system/deployments/coredns');
        return Number(d.body.status?.readyReplicas ?? 0) >= 1;
      },
      START_TIMEOUT_MS,
      'running CoreDNS',
      signal,
    );
    log(`cluster ready after ${since()}`);
    return cluster;
  } catch (error) {
    await stop().catch(() => {});
    if (error instanceof ClusterStartError) throw error;
    throw new ClusterStartError('cluster', (error as Error).message);
  }
}

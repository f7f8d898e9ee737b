// Flags and configuration files of each cluster component: a single-node cluster as kubeadm would lay it out,
// but with every path under the cluster's own directory and every address inside the node's namespace.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NodeAddresses } from './node-host.js';
import type { ClusterPki } from './pki.js';

export const NODE_NAME = 'portico-node';
export const API_PORT = 6443;
export const SERVICE_ACCOUNT_ISSUER = 'https://kubernetes.default.svc.cluster.local';
export const PAUSE_IMAGE = 'registry.k8s.io/pause:3.10.2';

export interface Layout {
  dir: string;
  a: NodeAddresses;
  pki: ClusterPki;
  /** kubeconfig per component, by the client identity names of the PKI. */
  kubeconfigs: Record<string, string>;
}

export function etcdArgs(l: Layout): string[] {
  return [
    '--name=node',
    `--data-dir=${join(l.dir, 'etcd')}`,
    '--listen-client-urls=http://127.0.0.1:2379',
    '--advertise-client-urls=http://127.0.0.1:2379',
    '--listen-peer-urls=http://127.0.0.1:2380',
    '--initial-advertise-peer-urls=http://127.0.0.1:2380',
    '--initial-cluster=node=http://127.0.0.1:2380',
    '--listen-metrics-urls=http://127.0.0.1:2381',
    '--unsafe-no-fsync=true',
    '--quota-backend-bytes=4294967296',
    '--auto-compaction-retention=1',
    '--log-level=warn',
  ];
}

export function apiServerArgs(l: Layout): string[] {
  const p = l.pki;
  return [
    '--etcd-servers=http://127.0.0.1:2379',
    // Inside the node's namespace 0.0.0.0 means its loopback, its link to the host and the pod bridge only.
    '--bind-address=0.0.0.0',
    `--advertise-address=${l.a.nodeIp}`,
    `--secure-port=${API_PORT}`,
    `--cert-dir=${join(l.dir, 'apiserver')}`,
    `--tls-cert-file=${p.apiserver.cert}`,
    `--tls-private-key-file=${p.apiserver.key}`,
    `--client-ca-file=${p.caCert}`,
    `--service-account-issuer=${SERVICE_ACCOUNT_ISSUER}`,
    `--service-account-key-file=${p.saPub}`,
    `--service-account-signing-key-file=${p.saKey}`,
    '--authorization-mode=Node,RBAC',
    '--enable-admission-plugins=NodeRestriction',
    `--service-cluster-ip-range=${l.a.serviceCidr}`,
    '--allow-privileged=true',
    // ClusterTrustBundle (GEP-5075 CA references) is beta and off by default in v1.36: both switches serve it.
    '--feature-gates=ClusterTrustBundle=true',
    '--runtime-config=certificates.k8s.io/v1beta1/clustertrustbundles=true',
    `--kubelet-client-certificate=${p.clients['apiserver-kubelet']!.cert}`,
    `--kubelet-client-key=${p.clients['apiserver-kubelet']!.key}`,
    `--kubelet-certificate-authority=${p.caCert}`,
    '--kubelet-preferred-address-types=InternalIP',
    '--profiling=false',
    '--v=1',
  ];
}

export function controllerManagerArgs(l: Layout): string[] {
  const kc = l.kubeconfigs['controller-manager']!;
  return [
    `--kubeconfig=${kc}`,
    `--authentication-kubeconfig=${kc}`,
    `--authorization-kubeconfig=${kc}`,
    '--leader-elect=false',
    '--use-service-account-credentials=true',
    `--root-ca-file=${l.pki.caCert}`,
    `--service-account-private-key-file=${l.pki.saKey}`,
    `--cluster-signing-cert-file=${l.pki.caCert}`,
    `--cluster-signing-key-file=${l.pki.caKey}`,
    `--cluster-cidr=${l.a.clusterCidr}`,
    `--service-cluster-ip-range=${l.a.serviceCidr}`,
    `--bind-address=${l.a.nodeIp}`,
    '--secure-port=10257',
    `--cert-dir=${join(l.dir, 'controller-manager')}`,
    // The HPA controller handles each autoscaler once per period, a new one too (15 s by default): tests that
    // watch an autoscaler set a fleet's replicas should not wait most of that out.
    '--horizontal-pod-autoscaler-sync-period=2s',
    '--profiling=false',
    '--v=1',
  ];
}

export function schedulerArgs(l: Layout): string[] {
  const kc = l.kubeconfigs.scheduler!;
  return [
    `--kubeconfig=${kc}`,
    `--authentication-kubeconfig=${kc}`,
    `--authorization-kubeconfig=${kc}`,
    '--leader-elect=false',
    `--bind-address=${l.a.nodeIp}`,
    '--secure-port=10259',
    `--cert-dir=${join(l.dir, 'scheduler')}`,
    '--profiling=false',
    '--v=1',
  ];
}

export function containerdPaths(l: Layout) {
  const base = join(l.dir, 'containerd');
  return {
    config: join(base, 'config.toml'),
    socket: join(base, 'containerd.sock'),
    root: join(base, 'root'),
    state: join(base, 'state'),
    runcRoot: join(base, 'runc'),
    temp: join(base, 'tmp'),
    // Shim sockets: a short path, since a unix socket path holds at most 107 bytes.
    shimSockets: join(l.dir, 's'),
    cniConf: join(l.dir, 'cni', 'net.d'),
    cniData: join(l.dir, 'cni', 'ipam'),
  };
}

/** containerd 2.x (config version 4): CRI with runc on cgroupfs, the Debian CNI plugins, nothing global. */
export function writeContainerdConfig(l: Layout, runc: string): string {
  const c = containerdPaths(l);
  for (const d of [c.cniConf, c.temp, c.shimSockets]) mkdirSync(d, { recursive: true });
  const images = "plugins.'io.containerd.cri.v1.images'";
  const runtime = "plugins.'io.containerd.cri.v1.runtime'";
  const toml = `version = 4
root = '${c.root}'
state = '${c.state}'
temp = '${c.temp}'
# No drop-in files from the host's /etc/containerd.
imports = []
# Plugins this node has no use for, and that would otherwise probe or create host paths (/opt/containerd).
disabled_plugins = [
  'io.containerd.snapshotter.v1.btrfs', 'io.containerd.snapshotter.v1.zfs',
  'io.containerd.snapshotter.v1.devmapper', 'io.containerd.snapshotter.v1.aufs',
  'io.containerd.snapshotter.v1.erofs', 'io.containerd.snapshotter.v1.blockfile',
  'io.containerd.differ.v1.erofs', 'io.containerd.mount-handler.v1.erofs',
  'io.containerd.nri.v1.nri', 'io.containerd.internal.v1.opt', 'io.containerd.image-verifier.v1.bindir',
  'io.containerd.tracing.processor.v1.otlp', 'io.containerd.internal.v1.tracing',
]

[plugins.'io.containerd.server.v1.grpc']
  address = '${c.socket}'
[plugins.'io.containerd.server.v1.ttrpc']
  address = '${c.socket}.ttrpc'
[plugins.'io.containerd.shim.v1.manager']
  socket_dir = '${c.shimSockets}'

[${images}]
  snapshotter = 'overlayfs'
# Pinned, so the kubelet's image GC never removes what cannot be pulled again.
[${images}.pinned_images]
  sandbox = '${PAUSE_IMAGE}'

[${runtime}]
  enable_unprivileged_ports = true
  enable_unprivileged_icmp = true
  netns_mounts_under_state_dir = true
  # This machine withholds CAP_SYS_RESOURCE even from root: the kubelet's negative oom_score_adj (-998 for the
  # sandbox) cannot be written, so containerd keeps each score at or above its own instead.
  restrict_oom_score_adj = true
  cdi_spec_dirs = []
[${runtime}.cni]
  bin_dirs = ['/usr/lib/cni']
  conf_dir = '${c.cniConf}'
[${runtime}.containerd]
  default_runtime_name = 'runc'
[${runtime}.containerd.runtimes.runc]
  runtime_type = 'io.containerd.runc.v2'
[${runtime}.containerd.runtimes.runc.options]
  BinaryName = '${runc}'
  Root = '${c.runcRoot}'
  SystemdCgroup = false

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = '127.0.0.1'
  stream_server_port = '0'
`;
  writeFileSync(c.config, toml);
  return c.config;
}

/** The pod network: one bridge, host-local addresses, no masquerade (nothing is meant to leave the node). */
export function writeCniConfig(l: Layout): void {
  const c = containerdPaths(l);
  const conf = {
    cniVersion: '1.0.0',
    name: 'portico-pods',
    plugins: [
      {
        type: 'bridge',
        bridge: 'cni0',
        isGateway: true,
        ipMasq: false,
        hairpinMode: true,
        ipam: {
          type: 'host-local',
          dataDir: c.cniData,
          ranges: [[{ subnet: l.a.podCidr }]],
          routes: [{ dst: '0.0.0.0/0' }],
        },
      },
      { type: 'portmap', capabilities: { portMappings: true } },
    ],
  };
  writeFileSync(join(c.cniConf, '10-portico-pods.conflist'), JSON.stringify(conf, null, 2));
}

export function kubeletPaths(l: Layout) {
  const base = join(l.dir, 'kubelet');
  return {
    root: base,
    config: join(base, 'config.yaml'),
    pki: join(base, 'pki'),
    logs: join(l.dir, 'pod-logs'),
  };
}

export function writeKubeletConfig(l: Layout): string {
  const k = kubeletPaths(l);
  const c = containerdPaths(l);
  mkdirSync(k.pki, { recursive: true });
  mkdirSync(k.logs, { recursive: true });
  // Pods get the cluster's DNS only: an empty host resolv.conf keeps the machine's resolver out of every pod.
  const resolv = join(l.dir, 'resolv.conf');
  writeFileSync(resolv, '');
  const config = {
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    // This machine mounts cgroup v1 (hybrid); the kubelet refuses v1 from 1.35 unless told.
    failCgroupV1: false,
    cgroupDriver: 'cgroupfs',
    cgroupRoot: `/${l.a.cgroupRoot}`,
    containerRuntimeEndpoint: `unix://${c.socket}`,
    address: l.a.nodeIp,
    port: 10250,
    readOnlyPort: 0,
    healthzBindAddress: l.a.nodeIp,
    healthzPort: 10248,
    tlsCertFile: l.pki.kubeletServing.cert,
    tlsPrivateKeyFile: l.pki.kubeletServing.key,
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: true },
      x509: { clientCAFile: l.pki.caCert },
    },
    authorization: { mode: 'Webhook' },
    clusterDomain: 'cluster.local',
    clusterDNS: [l.a.dnsServiceIp],
    resolvConf: resolv,
    podLogsDir: k.logs,
    failSwapOn: false,
    // Images here cannot be pulled again: never collect them.
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    evictionHard: { 'memory.available': '1Mi', 'nodefs.available': '1%', 'imagefs.available': '1%' },
    evictionPressureTransitionPeriod: '5s',
    podCIDR: l.a.podCidr,
    serializeImagePulls: false,
    syncFrequency: '10s',
    fileCheckFrequency: '10s',
    nodeStatusUpdateFrequency: '5s',
    shutdownGracePeriod: '0s',
    maxPods: 250,
  };
  writeFileSync(k.config, JSON.stringify(config, null, 2));
  return k.config;
}

export function kubeletArgs(l: Layout): string[] {
  const k = kubeletPaths(l);
  return [
    `--config=${k.config}`,
    `--kubeconfig=${l.kubeconfigs.kubelet}`,
    `--root-dir=${k.root}`,
    `--cert-dir=${k.pki}`,
    `--hostname-override=${NODE_NAME}`,
    `--node-ip=${l.a.nodeIp}`,
    '--v=1',
  ];
}

export function writeKubeProxyConfig(l: Layout): string {
  const path = join(l.dir, 'kube-proxy.yaml');
  const config = {
    apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
    kind: 'KubeProxyConfiguration',
    clientConnection: { kubeconfig: l.kubeconfigs['kube-proxy'] },
    mode: 'iptables',
    clusterCIDR: l.a.clusterCidr,
    hostnameOverride: NODE_NAME,
    bindAddress: l.a.nodeIp,
    healthzBindAddress: `${l.a.nodeIp}:10256`,
    metricsBindAddress: '127.0.0.1:10249',
    // Leave the machine-wide conntrack settings alone: a network namespace cannot change most of them.
    conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s' },
    // A change reaches the node's rules within 100 ms, not up to the default 1 s: a Gateway is Programmed once its
    // proxy has its config, and a datagram sent then to a Service still without the endpoint is refused (the
    // conformance suite's UDP probe waits 10 s before it sends again).
    iptables: { localhostNodePorts: false, minSyncPeriod: '100ms' },
  };
  writeFileSync(path, JSON.stringify(config, null, 2));
  return path;
}

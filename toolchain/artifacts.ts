// What the test toolchain is made of: Go programs built from the pinned modules beside this file, one C
// program, and the container images the cluster imports. Versions live here and in each module's go.mod.

export const KUBERNETES_VERSION = 'v1.36.3';
export const PAUSE_VERSION = '3.10.2';
export const COREDNS_VERSION = 'v1.12.2';
/**
 * The Node the image runs: the newest 26.x (Active LTS since October 2026) on the npm registry. Kept at the newest
 * patch of its line, which carries the security fixes: test/toolchain/image-node.test.ts fails when it is not.
 */
export const NODE_VERSION = '26.12.1';
/**
 * Debian packages on the host: the CNI plugins and iptables the node runs, libseccomp to build runc (Debian's
 * runc 1.1 cannot start containerd 2's pod sandboxes on this kernel: "can't get final child's PID from pipe").
 */
export const HOST_PACKAGES = [
  'containernetworking-plugins',
  'iptables',
  'conntrack',
  'libseccomp-dev',
  'pkg-config',
  // Real servers the tests run: Redis for global rate limits, HAProxy as a PROXY protocol sender.
  'redis-server',
  'haproxy',
];
export const RUNC_VERSION = 'v1.5.2';
export const HELM_VERSION = 'v4.3.1';
/**
 * The Go the conformance module needs: Gateway API v1.7.0 says `go 1.27.0`, newer than the machine's Go 1.26.
 * The go command fetches this approved toolchain through the Go module proxy (GOTOOLCHAIN), about 76 MB once per
 * machine; every other module here stays on the machine's own Go (GOTOOLCHAIN=local).
 */
export const CONFORMANCE_GO_TOOLCHAIN = 'go1.27.3';
/**
 * Debian packages unpacked into the Portico image: the C/C++ runtime Node links against (libatomic since Node 26),
 * and tini as PID 1. The build runs the image's Node on them, so a library missing here fails it.
 */
export const IMAGE_PACKAGES = ['libc6', 'libgcc-s1', 'libstdc++6', 'libatomic1', 'tini'];

export interface GoBuild {
  /** Folder of the Go module, relative to toolchain/.. (the repository). */
  module: string;
  /** Main packages; each becomes a binary named by `names` (same order). */
  packages: string[];
  names: string[];
  tags?: string;
  ldflags?: string;
  cgo?: boolean;
  /** Build the module's own tests as one binary (`go test -c`) instead of main packages. */
  test?: boolean;
  /** GOTOOLCHAIN for this module's go commands; the machine's own Go (`local`) when absent. */
  toolchain?: string;
  /** Folders under the module (each a `replace` target) whose files are part of the build's cache key. */
  vendored?: string[];
}

function versionFlags(version: string): string {
  const [major, minor] = version.slice(1).split('.');
  return ['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version']
    .flatMap((p) => [
      `-X ${p}.gitVersion=${version}`,
      `-X ${p}.gitMajor=${major}`,
      `-X ${p}.gitMinor=${minor}`,
      `-X ${p}.gitTreeState=clean`,
    ])
    .join(' ');
}

const KUBE_COMMANDS = [
  'kube-apiserver',
  'kube-controller-manager',
  'kube-scheduler',
  'kubelet',
  'kube-proxy',
  'kubectl',
];

/**
 * The suite's echo servers' module, `sigs.k8s.io/gateway-api-conformance-images`: the Go module proxy serves no
 * version of it, so its public v0.1.0 tag is kept here unmodified and conformance/go.mod replaces it with this folder
 * (conformance/third_party/README.md says why v0.1.0 stands in for the v0.2.0 the suite names).
 */
const CONFORMANCE_IMAGES_SOURCE = 'third_party/gateway-api-conformance-images';

export const GO_BUILDS: Record<string, GoBuild> = {
  kubernetes: {
    module: 'toolchain/kubernetes',
    packages: KUBE_COMMANDS.map((c) => `k8s.io/kubernetes/cmd/${c}`),
    names: KUBE_COMMANDS,
    tags: 'selinux,notest',
    ldflags: `-s -w ${versionFlags(KUBERNETES_VERSION)}`,
  },
  etcd: {
    module: 'toolchain/kubernetes',
    packages: ['go.etcd.io/etcd/server/v3'],
    names: ['etcd'],
    ldflags: '-s -w',
  },
  containerd: {
    module: 'toolchain/containerd',
    packages: [
      'github.com/containerd/containerd/v2/cmd/containerd',
      'github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2',
      'github.com/containerd/containerd/v2/cmd/ctr',
    ],
    names: ['containerd', 'containerd-shim-runc-v2', 'ctr'],
    tags: 'no_btrfs,no_devmapper,no_zfs',
    ldflags: '-s -w',
  },
  runc: {
    module: 'toolchain/runc',
    packages: ['github.com/opencontainers/runc'],
    names: ['runc'],
    tags: 'seccomp',
    ldflags: `-s -w -X main.version=${RUNC_VERSION.slice(1)}`,
    cgo: true,
  },
  coredns: {
    module: 'toolchain/coredns',
    packages: ['github.com/coredns/coredns'],
    names: ['coredns'],
    ldflags: '-s -w',
  },
  helm: {
    module: 'toolchain/helm',
    packages: ['helm.sh/helm/v4/cmd/helm'],
    names: ['helm'],
    ldflags: `-s -w -X helm.sh/helm/v4/internal/version.version=${HELM_VERSION}`,
  },
  'oci-image': {
    module: 'toolchain/image',
    packages: ['.'],
    names: ['oci-image'],
    ldflags: '-s -w',
  },
  conformance: {
    module: 'conformance',
    packages: ['.'],
    names: ['conformance.test'],
    test: true,
    toolchain: CONFORMANCE_GO_TOOLCHAIN,
    vendored: [CONFORMANCE_IMAGES_SOURCE],
  },
  'echo-basic': {
    module: 'conformance',
    packages: ['sigs.k8s.io/gateway-api-conformance-images/echo-basic'],
    names: ['echo-basic'],
    ldflags: '-s -w',
    toolchain: CONFORMANCE_GO_TOOLCHAIN,
    vendored: [CONFORMANCE_IMAGES_SOURCE],
  },
};

export interface ImageRecipe {
  names: string[];
  /** Binaries from GO_BUILDS (or 'pause') placed at /<name> in the image. */
  binaries: string[];
  entrypoint: string[];
  user: string;
}

/** Images of single static binaries. The echo server of the suite's own version answers to every tag its manifests name. */
export const BINARY_IMAGES: Record<string, ImageRecipe> = {
  pause: {
    names: [`registry.k8s.io/pause:${PAUSE_VERSION}`],
    binaries: ['pause'],
    entrypoint: ['/pause'],
    user: '65535:65535',
  },
  coredns: {
    names: [`registry.k8s.io/coredns/coredns:${COREDNS_VERSION}`],
    binaries: ['coredns'],
    entrypoint: ['/coredns'],
    user: '65532:65532',
  },
  'echo-basic': {
    names: [
      'registry.k8s.io/gateway-api/conformance/echo-basic:v0.1.0',
      'registry.k8s.io/gateway-api/conformance/echo-basic:v0.2.0',
    ],
    binaries: ['echo-basic'],
    entrypoint: ['/echo-basic'],
    user: '65532:65532',
  },
};

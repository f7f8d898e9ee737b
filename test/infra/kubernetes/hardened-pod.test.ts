// The renderer's own guard, behind the translator's: whatever a fleet's shape holds (here every weakening value
// and every pod field a tenant might try, as if a shape had reached it unchecked), the pods it renders are Pod
// Security `restricted` as Portico makes them, run as the fleet's own ServiceAccount, mount only the fleet's own
// credentials, and carry no annotation that sets a security profile.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1PodTemplateSpec, V1SecurityContext } from '@kubernetes/client-node';
import { type RenderOptions, renderFleetObjects } from '../../../src/infra/kubernetes/render.js';
import type { FleetInfra } from '../../../src/ir/fleet-infra.js';
import { CONTAINER_SELINUX_TYPES, type FleetShape, SAFE_SYSCTLS } from '../../../src/ir/fleet-shape.js';

const WEAKENING_CONTEXT = {
  runAsNonRoot: false,
  runAsUser: 0,
  allowPrivilegeEscalation: true,
  privileged: true,
  readOnlyRootFilesystem: false,
  procMount: 'Unmasked',
  capabilities: { add: ['SYS_ADMIN', 'NET_BIND_SERVICE'], drop: [] },
  seccompProfile: { type: 'Unconfined' },
  appArmorProfile: { type: 'Unconfined' },
  seLinuxOptions: { type: 'spc_t', user: 'system_u', role: 'system_r' },
  windowsOptions: { hostProcess: true },
  sysctls: [
    { name: 'kernel.core_pattern', value: '|/tmp/x' },
    { name: 'net.ipv4.ip_unprivileged_port_start', value: '80' },
  ],
};

const SECURITY_ANNOTATIONS = {
  'container.apparmor.security.beta.kubernetes.io/proxy': 'unconfined',
  'seccomp.security.alpha.kubernetes.io/pod': 'unconfined',
  'container.seccomp.security.alpha.kubernetes.io/proxy': 'unconfined',
};

/** A shape with everything a tenant might try, typed as the renderer receives it. */
const HOSTILE_SHAPE = {
  pod: {
    securityContext: WEAKENING_CONTEXT,
    annotations: { ...SECURITY_ANNOTATIONS, 'team.example.com/owner': 'a' },
    // Not shape fields at all: an object an API server pruned less than the chart's CRD would still hold them.
    hostNetwork: true,
    hostPID: true,
    hostIPC: true,
    hostUsers: false,
    shareProcessNamespace: true,
    nodeName: 'control-plane-1',
    runtimeClassName: 'unsandboxed',
    serviceAccountName: 'portico-gateway',
    automountServiceAccountToken: true,
    volumes: [
      { name: 'host', hostPath: { path: '/' } },
      { name: 'controller', secret: { secretName: 'portico-gateway-server-cert' } },
    ],
    initContainers: [{ name: 'init', image: 'evil', securityContext: { privileged: true } }],
    containers: [{ name: 'extra', image: 'evil' }],
  },
  container: {
    securityContext: WEAKENING_CONTEXT,
    image: 'evil',
    command: ['/bin/sh'],
    volumeMounts: [{ name: 'host', mountPath: '/host' }],
  },
} as unknown as FleetShape;

const INFRA: FleetInfra = {
  fleet: 'team-a/eg',
  name: 'proxy-team-a-eg-77bb22a9',
  namespace: 'team-a',
  labels: {
    'app.kubernetes.io/name': 'portico-proxy',
    'gateway.portico.io/owning-gateway-namespace': 'team-a',
    'gateway.portico.io/owning-gateway-name': 'eg',
  },
  owner: { gateway: 'team-a/eg', uid: 'u-1' },
  // A Gateway's spec.infrastructure annotations go on its objects, but never set a pod's profile.
  propagated: { labels: {}, annotations: { ...SECURITY_ANNOTATIONS, 'gateway.example.com/x': 'y' } },
  gateways: ['team-a/eg'],
  ports: [{ name: 'http-80', port: 80, protocol: 'TCP', containerPort: 10080 }],
  kubernetes: HOSTILE_SHAPE,
};

const MODES: [string, RenderOptions, string[]][] = [
  [
    'Gateway Namespace Mode',
    { image: 'portico:dev', controllerNamespace: 'portico-gateway-system', deployType: 'GatewayNamespace' },
    ['ca', 'token'],
  ],
  [
    'Controller Namespace Mode',
    {
      image: 'portico:dev',
      controllerNamespace: 'portico-gateway-system',
      deployType: 'ControllerNamespace',
    },
    ['certs'],
  ],
];

/** Every way `s` falls short of Portico's own container context, one line each. */
function containerShortfalls(s: V1SecurityContext | undefined, where: string): string[] {
  const out: string[] = [];
  const check = (ok: boolean, what: string) => {
    if (!ok) out.push(`${where}: ${what}`);
  };
  check(s?.allowPrivilegeEscalation === false, 'allowPrivilegeEscalation is not false');
  check(s?.readOnlyRootFilesystem === true, 'readOnlyRootFilesystem is not true');
  check(s?.runAsNonRoot === true, 'runAsNonRoot is not true');
  check(s?.privileged !== true, 'privileged');
  check(s?.runAsUser !== 0, 'runs as root');
  check(s?.procMount === undefined || s.procMount === 'Default', `procMount ${s?.procMount}`);
  check(s?.capabilities?.drop?.includes('ALL') === true, 'does not drop ALL capabilities');
  check(
    (s?.capabilities?.add ?? []).every((c) => c === 'NET_BIND_SERVICE'),
    `adds ${s?.capabilities?.add?.join(',')}`,
  );
  check(s?.seccompProfile?.type === 'RuntimeDefault', `seccomp ${s?.seccompProfile?.type}`);
  check(
    s?.appArmorProfile === undefined || s.appArmorProfile.type === 'RuntimeDefault',
    `AppArmor ${s?.appArmorProfile?.type}`,
  );
  check(s?.windowsOptions?.hostProcess !== true, 'a Windows host process');
  check(
    s?.seLinuxOptions === undefined ||
      (s.seLinuxOptions.user === undefined &&
        s.seLinuxOptions.role === undefined &&
        (s.seLinuxOptions.type === undefined || CONTAINER_SELINUX_TYPES.includes(s.seLinuxOptions.type))),
    `SELinux ${JSON.stringify(s?.seLinuxOptions)}`,
  );
  return out;
}

/** Every way a rendered pod template is less than Portico's own, one line each. */
function podShortfalls(template: V1PodTemplateSpec, ownVolumes: string[]): string[] {
  const spec = template.spec!;
  const out: string[] = [];
  const check = (ok: boolean, what: string) => {
    if (!ok) out.push(what);
  };
  const pod = spec.securityContext;
  check(pod?.runAsNonRoot === true, 'pod runAsNonRoot is not true');
  check(pod?.runAsUser !== 0, 'pod runs as root');
  check(pod?.seccompProfile?.type === 'RuntimeDefault', `pod seccomp ${pod?.seccompProfile?.type}`);
  check(
    pod?.appArmorProfile === undefined || pod.appArmorProfile.type === 'RuntimeDefault',
    `pod AppArmor ${pod?.appArmorProfile?.type}`,
  );
  check(pod?.windowsOptions?.hostProcess !== true, 'pod is a Windows host process');
  check(
    pod?.seLinuxOptions === undefined ||
      (pod.seLinuxOptions.user === undefined &&
        pod.seLinuxOptions.role === undefined &&
        (pod.seLinuxOptions.type === undefined || CONTAINER_SELINUX_TYPES.includes(pod.seLinuxOptions.type))),
    `pod SELinux ${JSON.stringify(pod?.seLinuxOptions)}`,
  );
  for (const s of pod?.sysctls ?? []) check(SAFE_SYSCTLS.has(s.name), `unsafe sysctl ${s.name}`);
  check(spec.hostNetwork !== true, 'hostNetwork');
  check(spec.hostPID !== true, 'hostPID');
  check(spec.hostIPC !== true, 'hostIPC');
  check(spec.hostUsers !== false, 'hostUsers false');
  check(spec.shareProcessNamespace !== true, 'shareProcessNamespace');
  check(spec.nodeName === undefined, `nodeName ${spec.nodeName}`);
  check(spec.runtimeClassName === undefined, `runtimeClassName ${spec.runtimeClassName}`);
  check(spec.serviceAccountName === INFRA.name, `serviceAccountName ${spec.serviceAccountName}`);
  check(spec.automountServiceAccountToken === false, 'the ServiceAccount token is mounted');
  check(spec.initContainers === undefined, 'init containers');
  check(
    JSON.stringify(spec.containers.map((c) => c.name)) === JSON.stringify(['proxy', 'shutdown-manager']),
    `containers ${spec.containers.map((c) => c.name).join(',')}`,
  );
  check(
    JSON.stringify((spec.volumes ?? []).map((v) => v.name)) === JSON.stringify(ownVolumes),
    `volumes ${(spec.volumes ?? []).map((v) => v.name).join(',')}`,
  );
  for (const c of spec.containers) {
    out.push(...containerShortfalls(c.securityContext, c.name));
    check(c.image === 'portico:dev', `${c.name} image ${c.image}`);
    check(c.command === undefined, `${c.name} command`);
    for (const m of c.volumeMounts ?? []) check(ownVolumes.includes(m.name), `${c.name} mounts ${m.name}`);
  }
  const annotations = Object.keys(template.metadata?.annotations ?? {});
  for (const key of annotations)
    check(!key.includes('apparmor') && !key.includes('seccomp'), `pod annotation ${key}`);
  check(annotations.includes('team.example.com/owner'), 'the shape’s other annotations are kept');
  return out;
}

for (const [mode, options, ownVolumes] of MODES) {
  test(`${mode}: no shape makes the proxy pod weaker than Portico's own, or names objects it does not own`, () => {
    const objects = renderFleetObjects(
      { ...INFRA, ...(mode === 'Controller Namespace Mode' ? { owner: undefined } : {}) },
      options,
    );
    assert.deepEqual(podShortfalls(objects.workload.spec!.template, ownVolumes), []);
  });

  test(`${mode}: a DaemonSet's pods are held to the same`, () => {
    const infra: FleetInfra = { ...INFRA, kubernetes: { ...HOSTILE_SHAPE, daemonSet: {} } };
    const objects = renderFleetObjects(infra, options);
    assert.equal(objects.workload.kind, 'DaemonSet');
    assert.deepEqual(podShortfalls(objects.workload.spec!.template, ownVolumes), []);
  });
}

// A tenant's DataPlaneProxy (a Gateway's own parametersRef) can never make the fleet's pod weaker than Portico's
// own, Pod Security `restricted`: every security-context value that would (root, privilege, writable root,
// added capabilities, a profile other than RuntimeDefault, an unconfined SELinux type, a Windows host process,
// an unsafe sysctl, a profile set by annotation) makes the Gateway Accepted=False, InvalidParameters, naming the
// field, and its fleet keeps its last good parameters. Values that choose ids or add restrictions are accepted.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ApiObject } from '../../src/api/kinds.js';
import { buildSnapshot } from '../../src/api/snapshot.js';
import { validateObject } from '../../src/api/validate.js';
import { type TranslateOptions, translate } from '../../src/translate/index.js';

const options: TranslateOptions = {
  controllerName: 'gateway.portico.io/gatewayclass-controller',
  controllerNamespace: 'portico-gateway-system',
  deployType: 'GatewayNamespace',
};

function valid(raw: unknown): ApiObject {
  const r = validateObject(raw);
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.object;
}

const gatewayClass = valid({
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'GatewayClass',
  metadata: { name: 'eg' },
  spec: { controllerName: options.controllerName },
});
const gateway = valid({
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'Gateway',
  metadata: { name: 'web', namespace: 'team' },
  spec: {
    gatewayClassName: 'eg',
    infrastructure: { parametersRef: { group: 'gateway.portico.io', kind: 'DataPlaneProxy', name: 'own' } },
    listeners: [{ name: 'http', protocol: 'HTTP', port: 80 }],
  },
});

/** The Gateway's Accepted condition when its own DataPlaneProxy has `kubernetes` as its spec.kubernetes. */
function acceptedWith(kubernetes: unknown): { status: string; reason: string; message: string } {
  const own = valid({
    apiVersion: 'gateway.portico.io/v1alpha1',
    kind: 'DataPlaneProxy',
    metadata: { name: 'own', namespace: 'team' },
    spec: { kubernetes },
  });
  const result = translate(buildSnapshot([gatewayClass, gateway, own]), options);
  const status = result.statuses.find((s) => s.kind === 'Gateway')!.status as {
    conditions: { type: string; status: string; reason: string; message: string }[];
  };
  const { status: value, reason, message } = status.conditions.find((c) => c.type === 'Accepted')!;
  return { status: value, reason, message };
}

const POD = 'spec.kubernetes.pod.securityContext';
const CONTAINER = 'spec.kubernetes.container.securityContext';

/** [field named in the refusal, the shape that tries it] */
const WEAKENING: [string, unknown][] = [
  [`${POD}.runAsNonRoot`, { pod: { securityContext: { runAsNonRoot: false } } }],
  [`${POD}.runAsUser`, { pod: { securityContext: { runAsUser: 0 } } }],
  [`${POD}.seccompProfile.type`, { pod: { securityContext: { seccompProfile: { type: 'Unconfined' } } } }],
  [
    `${POD}.seccompProfile.type`,
    {
      pod: { securityContext: { seccompProfile: { type: 'Localhost', localhostProfile: 'allow-all.json' } } },
    },
  ],
  [`${POD}.appArmorProfile.type`, { pod: { securityContext: { appArmorProfile: { type: 'Unconfined' } } } }],
  [
    `${POD}.appArmorProfile.type`,
    { pod: { securityContext: { appArmorProfile: { type: 'Localhost', localhostProfile: 'x' } } } },
  ],
  [`${POD}.seLinuxOptions.type`, { pod: { securityContext: { seLinuxOptions: { type: 'spc_t' } } } }],
  [`${POD}.seLinuxOptions.user`, { pod: { securityContext: { seLinuxOptions: { user: 'system_u' } } } }],
  [`${POD}.seLinuxOptions.role`, { pod: { securityContext: { seLinuxOptions: { role: 'system_r' } } } }],
  [
    `${POD}.windowsOptions.hostProcess`,
    { pod: { securityContext: { windowsOptions: { hostProcess: true } } } },
  ],
  [
    `${POD}.sysctls[1].name`,
    {
      pod: {
        securityContext: {
          sysctls: [
            { name: 'net.ipv4.ip_unprivileged_port_start', value: '0' },
            { name: 'kernel.core_pattern', value: '|/tmp/x' },
          ],
        },
      },
    },
  ],
  [
    'spec.kubernetes.pod.annotations["container.apparmor.security.beta.kubernetes.io/proxy"]',
    { pod: { annotations: { 'container.apparmor.security.beta.kubernetes.io/proxy': 'unconfined' } } },
  ],
  [
    'spec.kubernetes.pod.annotations["seccomp.security.alpha.kubernetes.io/pod"]',
    { pod: { annotations: { 'seccomp.security.alpha.kubernetes.io/pod': 'unconfined' } } },
  ],
  [`${CONTAINER}.runAsNonRoot`, { container: { securityContext: { runAsNonRoot: false } } }],
  [`${CONTAINER}.runAsUser`, { container: { securityContext: { runAsUser: 0 } } }],
  [`${CONTAINER}.privileged`, { container: { securityContext: { privileged: true } } }],
  [
    `${CONTAINER}.allowPrivilegeEscalation`,
    { container: { securityContext: { allowPrivilegeEscalation: true } } },
  ],
  [
    `${CONTAINER}.readOnlyRootFilesystem`,
    { container: { securityContext: { readOnlyRootFilesystem: false } } },
  ],
  [`${CONTAINER}.procMount`, { container: { securityContext: { procMount: 'Unmasked' } } }],
  [
    `${CONTAINER}.capabilities.add[0]`,
    { container: { securityContext: { capabilities: { add: ['SYS_ADMIN'] } } } },
  ],
  [
    `${CONTAINER}.capabilities.add[1]`,
    { container: { securityContext: { capabilities: { add: ['NET_BIND_SERVICE', 'NET_RAW'] } } } },
  ],
  [
    `${CONTAINER}.seccompProfile.type`,
    { container: { securityContext: { seccompProfile: { type: 'Localhost', localhostProfile: 'p' } } } },
  ],
  [
    `${CONTAINER}.appArmorProfile.type`,
    { container: { securityContext: { appArmorProfile: { type: 'Unconfined' } } } },
  ],
  [
    `${CONTAINER}.seLinuxOptions.type`,
    { container: { securityContext: { seLinuxOptions: { type: 'spc_t' } } } },
  ],
  [
    `${CONTAINER}.windowsOptions.hostProcess`,
    { container: { securityContext: { windowsOptions: { hostProcess: true } } } },
  ],
];

test('every value that would weaken the proxy pod is refused, the field named', () => {
  // Every case is tried, so a failure lists all that got through.
  const wrong: string[] = [];
  for (const [field, kubernetes] of WEAKENING) {
    const accepted = acceptedWith(kubernetes);
    if (accepted.status !== 'False') wrong.push(`${field}: accepted`);
    else if (
      accepted.reason !== 'InvalidParameters' ||
      !accepted.message.includes(`${field}: must not weaken`)
    )
      wrong.push(`${field}: ${accepted.reason}: ${accepted.message}`);
  }
  assert.deepEqual(wrong, []);
});

test('values that choose ids or add restrictions are accepted', () => {
  const accepted = acceptedWith({
    pod: {
      securityContext: {
        runAsUser: 10001,
        runAsGroup: 10001,
        fsGroup: 10001,
        supplementalGroups: [10002],
        seccompProfile: { type: 'RuntimeDefault' },
        appArmorProfile: { type: 'RuntimeDefault' },
        seLinuxOptions: { type: 'container_t', level: 's0:c123,c456' },
        sysctls: [{ name: 'net.ipv4.ip_unprivileged_port_start', value: '80' }],
      },
      annotations: { 'prometheus.io/scrape': 'true' },
    },
    container: {
      securityContext: {
        runAsNonRoot: true,
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        capabilities: { add: ['NET_BIND_SERVICE'], drop: ['NET_RAW'] },
        procMount: 'Default',
      },
    },
  });
  assert.equal(accepted.status, 'True', accepted.message);
});

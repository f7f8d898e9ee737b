// A container's process: argv and environment, with $(VAR) expansion, downward API values and absolute
// mount paths rewritten onto the pod's mount root (processes can't see real absolute mount paths).
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Lifecycle } from '../apiserver/lifecycle.js';
import {
  arrayAt,
  isJsonObject,
  type JsonObject,
  type KubeObject,
  objectAt,
  stringAt,
} from '../apiserver/object.js';
import { builtinType } from '../apiserver/resources.js';
import { fieldValue } from './fields.js';

const PRELOAD = fileURLToPath(new URL('./pod-preload.mjs', import.meta.url));
const SECRETS = builtinType('secrets');
const CONFIGMAPS = builtinType('configmaps');

export interface PodNetwork {
  apiServiceHost: string;
  apiServicePort: number;
  hostsFile: string;
}

export function expand(text: string, env: Record<string, string>): string {
  return text.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (match, name: string | undefined) =>
    name === undefined ? '$' : (env[name] ?? match),
  );
}

/** Rewrites `/etc/x/file` or `--flag=/etc/x/file` when it lies under a mountPath. */
export function rewriteMountPaths(arg: string, mountPaths: string[], root: string): string {
  const eq = arg.startsWith('-') ? arg.indexOf('=') : -1;
  const [prefix, value] = eq >= 0 ? [arg.slice(0, eq + 1), arg.slice(eq + 1)] : ['', arg];
  const sorted = [...mountPaths].sort((a, b) => b.length - a.length);
  for (const m of sorted) {
    const mount = m.replace(/\/+$/, '');
    if (value === mount || value.startsWith(`${mount}/`)) return `${prefix}${root}${value}`;
  }
  return arg;
}

function keyRef(lifecycle: Lifecycle, pod: KubeObject, ref: JsonObject, secret: boolean): string | undefined {
  const type = secret ? SECRETS : CONFIGMAPS;
  const object = lifecycle.store.get(
    type.storageKey,
    pod.metadata.namespace ?? '',
    stringAt(ref, 'name') ?? '',
  );
  const raw = stringAt(object, 'data', stringAt(ref, 'key') ?? '');
  if (raw === undefined) return undefined;
  return secret ? Buffer.from(raw, 'base64').toString('utf8') : raw;
}

export function containerEnv(
  lifecycle: Lifecycle,
  pod: KubeObject,
  container: JsonObject,
  network: PodNetwork,
  mountRoot: string,
): Record<string, string> {
  const podIP = stringAt(pod, 'status', 'podIP') ?? '';
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: mountRoot,
    HOSTNAME: pod.metadata.name ?? '',
    KUBERNETES_SERVICE_HOST: network.apiServiceHost,
    KUBERNETES_SERVICE_PORT: String(network.apiServicePort),
    KUBERNETES_SERVICE_PORT_HTTPS: String(network.apiServicePort),
    POD_IP: podIP,
    PORTICO_MOUNT_ROOT: mountRoot,
    PORTICO_SIM_HOSTS: network.hostsFile,
    PORTICO_SIM_POD_NAMESPACE: pod.metadata.namespace ?? '',
    PORTICO_SIM_AGENT_PID: String(process.pid),
    NODE_OPTIONS: `--import ${pathToFileURL(PRELOAD).href}`,
  };
  for (const item of arrayAt(container, 'env').filter(isJsonObject)) {
    const name = stringAt(item, 'name') ?? '';
    if (typeof item.value === 'string') {
      env[name] = expand(item.value, env);
      continue;
    }
    const from = objectAt(item, 'valueFrom');
    const fieldPath = stringAt(from, 'fieldRef', 'fieldPath');
    const secretRef = objectAt(from, 'secretKeyRef');
    const configRef = objectAt(from, 'configMapKeyRef');
    const value =
      fieldPath !== undefined
        ? fieldValue(pod, fieldPath)
        : secretRef !== undefined
          ? keyRef(lifecycle, pod, secretRef, true)
          : configRef !== undefined
            ? keyRef(lifecycle, pod, configRef, false)
            : undefined;
    env[name] = value ?? '';
  }
  return env;
}

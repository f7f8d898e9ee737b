// Pod volumes as files in the pod's directory: secret, configMap, projected (serviceAccountToken with
// audience and expiry, refreshed at 80% of its lifetime), downwardAPI and emptyDir.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { API_AUDIENCE } from '../apiserver/authn.js';
import type { Lifecycle } from '../apiserver/lifecycle.js';
import {
  arrayAt,
  isJsonObject,
  type JsonObject,
  type KubeObject,
  numberAt,
  objectAt,
  stringAt,
} from '../apiserver/object.js';
import { builtinType } from '../apiserver/resources.js';
import type { TokenParams } from '../apiserver/token-api.js';
import { fieldValue } from './fields.js';

const SECRETS = builtinType('secrets');
const CONFIGMAPS = builtinType('configmaps');

export interface VolumeContext {
  lifecycle: Lifecycle;
  issueToken(params: TokenParams): { token: string; exp: number };
  pod: KubeObject;
  /** Per-pod memory of issued tokens: file → refresh time (ms). */
  tokenRefresh: Map<string, number>;
}

type Files = Map<string, Buffer | string>;

export type VolumeResult = { ok: true } | { ok: false; message: string };

function writeIfChanged(path: string, content: Buffer | string): void {
  const bytes = typeof content === 'string' ? Buffer.from(content) : content;
  try {
    if (readFileSync(path).equals(bytes)) return;
  } catch {
    // Absent: write it.
  }
  mkdirSync(dirname(path), { recursive: true });
  const temp = `${path}.tmp-${process.pid}`;
  writeFileSync(temp, bytes, { mode: 0o600 });
  renameSync(temp, path);
}

function lookup(ctx: VolumeContext, kind: 'secret' | 'configMap', name: string): KubeObject | undefined {
  const type = kind === 'secret' ? SECRETS : CONFIGMAPS;
  return ctx.lifecycle.store.get(type.storageKey, ctx.pod.metadata.namespace ?? '', name);
}

function keyFiles(source: JsonObject, object: KubeObject, kind: 'secret' | 'configMap'): Files {
  const all = new Map<string, Buffer>();
  const data = objectAt(object, 'data') ?? {};
  for (const [k, v] of Object.entries(data)) {
    if (typeof v === 'string') all.set(k, kind === 'secret' ? Buffer.from(v, 'base64') : Buffer.from(v));
  }
  if (kind === 'secret') {
    for (const [k, v] of Object.entries(objectAt(object, 'stringData') ?? {}))
      if (typeof v === 'string') all.set(k, Buffer.from(v));
  } else {
    for (const [k, v] of Object.entries(objectAt(object, 'binaryData') ?? {}))
      if (typeof v === 'string') all.set(k, Buffer.from(v, 'base64'));
  }
  const items = arrayAt(source, 'items').filter(isJsonObject);
  if (items.length === 0) return all;
  const out: Files = new Map();
  for (const item of items) {
    const value = all.get(String(item.key ?? ''));
    if (value !== undefined) out.set(String(item.path ?? item.key), value);
  }
  return out;
}

function sourceFiles(
  ctx: VolumeContext,
  kind: 'secret' | 'configMap',
  source: JsonObject,
  files: Files,
): string | undefined {
  const name = stringAt(source, kind === 'secret' ? 'secretName' : 'name') ?? stringAt(source, 'name') ?? '';
  const object = lookup(ctx, kind, name);
  if (object === undefined) return source.optional === true ? undefined : `${kind} "${name}" not found`;
  for (const [k, v] of keyFiles(source, object, kind)) files.set(k, v);
  return undefined;
}

function tokenFile(ctx: VolumeContext, volumeDir: string, source: JsonObject, files: Files): void {
  const path = stringAt(source, 'path') ?? 'token';
  const file = join(volumeDir, path);
  const due = ctx.tokenRefresh.get(file);
  if (due !== undefined && Date.now() < due) return;
  const expirationSeconds = numberAt(source, 'expirationSeconds') ?? 3600;
  const audience = stringAt(source, 'audience');
  const { token } = ctx.issueToken({
    namespace: ctx.pod.metadata.namespace ?? '',
    serviceAccount: stringAt(ctx.pod, 'spec', 'serviceAccountName') ?? 'default',
    audiences: [audience ?? API_AUDIENCE],
    expirationSeconds,
    pod: ctx.pod.metadata.name ?? '',
  });
  ctx.tokenRefresh.set(file, Date.now() + expirationSeconds * 800);
  files.set(path, token);
}

function downwardFiles(ctx: VolumeContext, source: JsonObject, files: Files): void {
  for (const item of arrayAt(source, 'items').filter(isJsonObject)) {
    const fieldPath = stringAt(item, 'fieldRef', 'fieldPath');
    if (fieldPath !== undefined) files.set(String(item.path ?? ''), fieldValue(ctx.pod, fieldPath));
  }
}

/** Writes one volume's files under `volumeDir`; returns an error message when a source is missing. */
export function materialiseVolume(ctx: VolumeContext, volume: JsonObject, volumeDir: string): VolumeResult {
  mkdirSync(volumeDir, { recursive: true });
  const files: Files = new Map();
  const problems: string[] = [];
  const note = (m: string | undefined) => {
    if (m !== undefined) problems.push(m);
  };
  if (isJsonObject(volume.secret)) note(sourceFiles(ctx, 'secret', volume.secret, files));
  else if (isJsonObject(volume.configMap)) note(sourceFiles(ctx, 'configMap', volume.configMap, files));
  else if (isJsonObject(volume.downwardAPI)) downwardFiles(ctx, volume.downwardAPI, files);
  else if (isJsonObject(volume.projected)) {
    for (const s of arrayAt(volume.projected, 'sources').filter(isJsonObject)) {
      if (isJsonObject(s.secret)) note(sourceFiles(ctx, 'secret', s.secret, files));
      else if (isJsonObject(s.configMap)) note(sourceFiles(ctx, 'configMap', s.configMap, files));
      else if (isJsonObject(s.downwardAPI)) downwardFiles(ctx, s.downwardAPI, files);
      else if (isJsonObject(s.serviceAccountToken)) tokenFile(ctx, volumeDir, s.serviceAccountToken, files);
    }
  } else if (!isJsonObject(volume.emptyDir)) {
    return {
      ok: false,
      message: `volume "${String(volume.name)}": this volume type is not supported by the simulator`,
    };
  }
  if (problems.length > 0)
    return {
      ok: false,
      message: `MountVolume.SetUp failed for volume "${String(volume.name)}": ${problems.join('; ')}`,
    };
  for (const [path, content] of files) writeIfChanged(join(volumeDir, path), content);
  return { ok: true };
}

/** The volume a real kubelet adds for `automountServiceAccountToken`: token, ca.crt, namespace. */
export function serviceAccountVolume(): JsonObject {
  return {
    name: 'kube-api-access-sim',
    projected: {
      sources: [
        { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
        { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
        {
          downwardAPI: {
            items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }],
          },
        },
      ],
    },
  };
}

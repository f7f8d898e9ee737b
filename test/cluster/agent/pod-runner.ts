// One pod on the simulated node: volumes, container processes with restart backoff, readiness probes,
// status reporting, and graceful termination (preStop hook, SIGTERM, SIGKILL after the grace period).
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, rmSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Lifecycle } from '../apiserver/lifecycle.js';
import { nowTimestamp } from '../apiserver/lifecycle.js';
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
import { ApiError } from '../apiserver/status.js';
import type { TokenParams } from '../apiserver/token-api.js';
import { containerEnv, expand, type PodNetwork, rewriteMountPaths } from './container-env.js';
import { containerArgv, entrypointFor, type ImageRule } from './images.js';
import { probeOnce } from './probes.js';
import { materialiseVolume, serviceAccountVolume, type VolumeContext } from './volumes.js';

const PODS = builtinType('pods');

export interface PodRunnerOptions {
  lifecycle: Lifecycle;
  issueToken(params: TokenParams): { token: string; exp: number };
  network: PodNetwork;
  images: ImageRule[];
  podDir: string;
  /** Probes run at most this far apart, whatever `periodSeconds` says (tests stay fast). */
  maxProbeIntervalMs: number;
  restartBackoffMs: { initial: number; max: number };
  resyncMs: number;
  log: (line: string) => void;
}

interface ContainerState {
  spec: JsonObject;
  name: string;
  child: ChildProcess | undefined;
  restartCount: number;
  ready: boolean;
  startedAt: string | undefined;
  waiting: { reason: string; message?: string } | undefined;
  lastTerminated: JsonObject | undefined;
  timers: NodeJS.Timeout[];
  successes: number;
  failures: number;
  env: Record<string, string>;
}

export interface PodRunner {
  /** Terminates the containers: preStop hooks, SIGTERM, then SIGKILL after `graceSeconds`. */
  terminate(graceSeconds: number): Promise<void>;
}

export function runPod(o: PodRunnerOptions, initial: KubeObject): PodRunner {
  const ns = initial.metadata.namespace ?? '';
  const name = initial.metadata.name ?? '';
  const root = join(o.podDir, 'root');
  const logs = join(o.podDir, 'logs');
  mkdirSync(root, { recursive: true });
  mkdirSync(logs, { recursive: true });
  let pod = initial;
  let terminating = false;
  let volumesReady = false;
  let volumeMessage = '';
  const startTime = nowTimestamp();
  const tokenRefresh = new Map<string, number>();
  const spec = objectAt(pod, 'spec') ?? {};
  const volumes = arrayAt(spec, 'volumes').filter(isJsonObject);
  const automount = spec.automountServiceAccountToken !== false;
  const allVolumes = automount ? [...volumes, serviceAccountVolume()] : volumes;
  const containers: ContainerState[] = arrayAt(spec, 'containers')
    .filter(isJsonObject)
    .map((c) => ({
      spec: c,
      name: String(c.name ?? ''),
      child: undefined,
      restartCount: 0,
      ready: false,
      startedAt: undefined,
      waiting: { reason: 'ContainerCreating' },
      lastTerminated: undefined,
      timers: [],
      successes: 0,
      failures: 0,
      env: {},
    }));

  function mountsOf(c: JsonObject): { mountPath: string; target: string }[] {
    const out = arrayAt(c, 'volumeMounts')
      .filter(isJsonObject)
      .map((m) => ({
        mountPath: String(m.mountPath ?? ''),
        target: join(o.podDir, 'volumes', String(m.name ?? ''), String(m.subPath ?? '')),
      }));
    if (automount) {
      out.push({
        mountPath: '/var/run/secrets/kubernetes.io/serviceaccount',
        target: join(o.podDir, 'volumes', 'kube-api-access-sim'),
      });
    }
    return out;
  }

  function linkMounts(): void {
    for (const c of containers) {
      for (const m of mountsOf(c.spec)) {
        const link = join(root, m.mountPath);
        mkdirSync(dirname(link), { recursive: true });
        try {
          symlinkSync(m.target, link);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        }
      }
    }
  }

  function materialise(): void {
    const ctx: VolumeContext = { lifecycle: o.lifecycle, issueToken: o.issueToken, pod, tokenRefresh };
    const problems: string[] = [];
    for (const v of allVolumes) {
      const r = materialiseVolume(ctx, v, join(o.podDir, 'volumes', String(v.name ?? '')));
      if (!r.ok) problems.push(r.message);
    }
    volumeMessage = problems.join('; ');
    if (problems.length === 0 && !volumesReady) {
      volumesReady = true;
      linkMounts();
      for (const c of containers) start(c);
    }
  }

  function start(c: ContainerState): void {
    if (terminating) return;
    const image = String(c.spec.image ?? '');
    const entrypoint = entrypointFor(o.images, image);
    if (entrypoint === undefined) {
      c.waiting = { reason: 'ErrImagePull', message: `image "${image}" is not in the simulator's image map` };
      publish();
      return;
    }
    c.env = containerEnv(o.lifecycle, pod, c.spec, o.network, root);
    const mountPaths = mountsOf(c.spec).map((m) => m.mountPath);
    const words = (key: string) =>
      arrayAt(c.spec, key).map((w) => rewriteMountPaths(expand(String(w), c.env), mountPaths, root));
    const argv = containerArgv(entrypoint, words('command'), words('args'));
    const log = openSync(join(logs, `${c.name}.log`), 'a');
    const child = spawn(argv[0] ?? '', argv.slice(1), { env: c.env, cwd: root, stdio: ['ignore', log, log] });
    closeSync(log);
    c.child = child;
    c.waiting = undefined;
    c.startedAt = nowTimestamp();
    c.successes = 0;
    c.failures = 0;
    c.ready = objectAt(c.spec, 'readinessProbe') === undefined;
    child.on('error', (error) => o.log(`pod ${ns}/${name} container ${c.name}: ${error.message}`));
    child.on('exit', (code, signal) => {
      c.child = undefined;
      c.ready = false;
      for (const t of c.timers) clearTimeout(t);
      c.timers = [];
      c.lastTerminated = {
        exitCode: code ?? 128 + 9,
        reason: code === 0 ? 'Completed' : 'Error',
        ...(signal ? { signal: 0 } : {}),
        startedAt: c.startedAt,
        finishedAt: nowTimestamp(),
      };
      if (terminating) return;
      c.restartCount++;
      const delay = Math.min(o.restartBackoffMs.initial * 2 ** (c.restartCount - 1), o.restartBackoffMs.max);
      c.waiting = { reason: 'CrashLoopBackOff', message: `back-off restarting failed container ${c.name}` };
      c.timers.push(setTimeout(() => start(c), delay));
      publish();
    });
    schedule(c);
    publish();
  }

  function schedule(c: ContainerState): void {
    const probe = objectAt(c.spec, 'readinessProbe');
    if (probe === undefined) return;
    const period = Math.min((numberAt(probe, 'periodSeconds') ?? 10) * 1000, o.maxProbeIntervalMs);
    const initial = (numberAt(probe, 'initialDelaySeconds') ?? 0) * 1000;
    const tick = () => {
      if (c.child === undefined || terminating) return;
      const podIP = stringAt(pod, 'status', 'podIP') ?? '';
      void probeOnce(probe, c.spec, podIP, c.env).then((ok) => {
        if (c.child === undefined || terminating) return;
        if (ok) {
          c.failures = 0;
          c.successes++;
          if (c.successes >= (numberAt(probe, 'successThreshold') ?? 1)) c.ready = true;
        } else {
          c.successes = 0;
          c.failures++;
          if (c.failures >= (numberAt(probe, 'failureThreshold') ?? 3)) c.ready = false;
        }
        publish();
        c.timers.push(setTimeout(tick, period));
      });
    };
    c.timers.push(setTimeout(tick, Math.min(initial, 60_000)));
  }

  function containerStatus(c: ContainerState): JsonObject {
    const state: JsonObject =
      c.child !== undefined
        ? { running: { startedAt: c.startedAt } }
        : c.waiting !== undefined
          ? { waiting: c.waiting.message === undefined ? { reason: c.waiting.reason } : { ...c.waiting } }
          : { terminated: c.lastTerminated ?? { exitCode: 0, reason: 'Completed' } };
    if (!volumesReady && volumeMessage !== '')
      state.waiting = { reason: 'ContainerCreating', message: volumeMessage };
    return {
      name: c.name,
      image: String(c.spec.image ?? ''),
      imageID: '',
      containerID: c.child?.pid === undefined ? undefined : `sim://${c.child.pid}`,
      ready: c.ready,
      started: c.child !== undefined,
      restartCount: c.restartCount,
      state,
      lastState: c.lastTerminated === undefined ? {} : { terminated: c.lastTerminated },
    };
  }

  function publish(): void {
    const current = o.lifecycle.store.get(PODS.storageKey, ns, name);
    if (current === undefined) return;
    pod = current;
    const previous = objectAt(current, 'status') ?? {};
    const allReady = containers.length > 0 && containers.every((c) => c.ready) && !terminating;
    const running = containers.some((c) => c.child !== undefined);
    const condition = (type: string, ok: boolean): JsonObject => {
      const status = ok ? 'True' : 'False';
      const old = arrayAt(previous, 'conditions')
        .filter(isJsonObject)
        .find((x) => x.type === type);
      const since = old?.status === status ? old.lastTransitionTime : nowTimestamp();
      return { type, status, lastProbeTime: null, lastTransitionTime: since };
    };
    const status: JsonObject = {
      ...previous,
      phase: running || containers.some((c) => c.restartCount > 0) ? 'Running' : 'Pending',
      conditions: [
        condition('PodReadyToStartContainers', volumesReady),
        condition('Initialized', true),
        condition('Ready', allReady),
        condition('ContainersReady', allReady),
        condition('PodScheduled', true),
      ],
      startTime,
      containerStatuses: containers.map(containerStatus),
    };
    if (JSON.stringify(status) === JSON.stringify(previous)) return;
    try {
      o.lifecycle.update(PODS, { ...current, status }, 'status');
    } catch (error) {
      if (!(error instanceof ApiError && error.code === 404)) throw error;
    }
  }

  const resync = setInterval(() => {
    if (terminating) return;
    const current = o.lifecycle.store.get(PODS.storageKey, ns, name);
    if (current !== undefined) pod = current;
    try {
      materialise();
    } catch (error) {
      o.log(`pod ${ns}/${name}: volumes: ${(error as Error).message}`);
    }
    publish();
  }, o.resyncMs);

  try {
    materialise();
  } catch (error) {
    o.log(`pod ${ns}/${name}: volumes: ${(error as Error).message}`);
  }
  publish();

  function preStop(c: ContainerState, deadline: number): Promise<void> {
    const command = arrayAt(c.spec, 'lifecycle', 'preStop', 'exec', 'command').map(String);
    if (command.length === 0 || c.child === undefined) return Promise.resolve();
    const mountPaths = mountsOf(c.spec).map((m) => m.mountPath);
    const argv = containerArgv(
      [],
      command.map((w) => rewriteMountPaths(w, mountPaths, root)),
      [],
    );
    return new Promise((resolve) => {
      const log = openSync(join(logs, `${c.name}.prestop.log`), 'a');
      const hook = spawn(argv[0] ?? '', argv.slice(1), {
        env: c.env,
        cwd: root,
        stdio: ['ignore', log, log],
      });
      closeSync(log);
      const timer = setTimeout(() => hook.kill('SIGKILL'), Math.max(0, deadline - Date.now()));
      hook.on('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      hook.on('error', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  function stopContainer(c: ContainerState, deadline: number): Promise<void> {
    for (const t of c.timers) clearTimeout(t);
    c.timers = [];
    const child = c.child;
    if (child === undefined) return Promise.resolve();
    return preStop(c, deadline).then(
      () =>
        new Promise<void>((resolve) => {
          if (c.child === undefined) return resolve();
          const kill = setTimeout(() => child.kill('SIGKILL'), Math.max(0, deadline - Date.now()));
          child.once('exit', () => {
            clearTimeout(kill);
            resolve();
          });
          child.kill('SIGTERM');
        }),
    );
  }

  return {
    async terminate(graceSeconds) {
      terminating = true;
      clearInterval(resync);
      publish();
      const deadline = Date.now() + graceSeconds * 1000;
      await Promise.all(containers.map((c) => stopContainer(c, deadline)));
      rmSync(join(o.podDir, 'volumes'), { recursive: true, force: true });
    },
  };
}

// Services: clusterIP (and nodePort) allocation, LoadBalancer addresses in status, and a TCP proxy per
// Service port on the clusterIP and load-balancer IP that forwards to ready endpoints, round robin.
import { connect, createServer, type Server, type Socket } from 'node:net';
import type { Lifecycle } from '../apiserver/lifecycle.js';
import { arrayAt, isJsonObject, type KubeObject, objectAt, stringAt } from '../apiserver/object.js';
import { builtinType } from '../apiserver/resources.js';
import { ApiError } from '../apiserver/status.js';
import { SERVICE_NAME_LABEL } from './endpoint-slices.js';
import type { AddressRange } from './ip-range.js';

const SERVICES = builtinType('services');
const SLICES = builtinType('endpointslices');

interface Listener {
  server: Server;
  namespace: string;
  service: string;
  portName: string;
}

export interface ServiceProxy {
  stop(): Promise<void>;
}

function backends(
  lifecycle: Lifecycle,
  namespace: string,
  service: string,
  portName: string,
): { ip: string; port: number }[] {
  const out: { ip: string; port: number }[] = [];
  for (const slice of lifecycle.store.list(SLICES.storageKey, namespace)) {
    if (slice.metadata.labels?.[SERVICE_NAME_LABEL] !== service) continue;
    const port = arrayAt(slice, 'ports')
      .filter(isJsonObject)
      .find((p) => (p.name ?? '') === portName);
    if (port === undefined || typeof port.port !== 'number') continue;
    for (const e of arrayAt(slice, 'endpoints').filter(isJsonObject)) {
      if (objectAt(e, 'conditions')?.ready === false) continue;
      for (const ip of arrayAt(e, 'addresses')) if (typeof ip === 'string') out.push({ ip, port: port.port });
    }
  }
  return out;
}

/**
 * Passes a backend's reset on to the client. Not once the client's write side has ended: Node's `reset()` then
 * fails (EINVAL while the shutdown is in flight) yet marks the handle closing without closing it, a leak that
 * makes the process spin at exit.
 */
export function resetOrDestroy(socket: Socket): void {
  if (socket.writableEnded) socket.destroy();
  else socket.resetAndDestroy();
}

export function installServiceProxy(
  lifecycle: Lifecycle,
  clusterIPs: AddressRange,
  loadBalancerIPs: AddressRange,
  log: (line: string) => void,
): ServiceProxy {
  const listeners = new Map<string, Listener>();
  const lbByUid = new Map<string, string>();
  const ipByUid = new Map<string, string>();
  const nodePorts = new Set<number>();
  const turn = new Map<string, number>();
  let scheduled = false;
  let stopped = false;
  const sockets = new Set<Socket>();

  lifecycle.hooks.onCreate.push((type, svc) => {
    if (type !== SERVICES) return;
    const spec = objectAt(svc, 'spec') ?? {};
    svc.spec = spec;
    spec.type ??= 'ClusterIP';
    spec.sessionAffinity ??= 'None';
    const ports = arrayAt(spec, 'ports').filter(isJsonObject);
    for (const p of ports) {
      p.protocol ??= 'TCP';
      p.targetPort ??= p.port;
      if ((spec.type === 'LoadBalancer' || spec.type === 'NodePort') && p.nodePort === undefined) {
        let n = 30000 + Math.floor(Math.random() * 2768);
        while (nodePorts.has(n)) n = 30000 + Math.floor(Math.random() * 2768);
        nodePorts.add(n);
        p.nodePort = n;
      }
    }
    if (spec.clusterIP !== 'None') {
      if (typeof spec.clusterIP !== 'string' || spec.clusterIP === '') spec.clusterIP = clusterIPs.allocate();
      spec.clusterIPs = [spec.clusterIP];
    }
    spec.ipFamilies = ['IPv4'];
    spec.ipFamilyPolicy = 'SingleStack';
    spec.internalTrafficPolicy ??= 'Cluster';
    svc.status = { loadBalancer: {} };
  });

  function forward(key: string, l: Listener, client: Socket): void {
    const targets = backends(lifecycle, l.namespace, l.service, l.portName);
    if (targets.length === 0) {
      client.resetAndDestroy();
      return;
    }
    const n = turn.get(key) ?? 0;
    turn.set(key, n + 1);
    const target = targets[n % targets.length]!;
    const upstream = connect({ host: target.ip, port: target.port });
    client.pipe(upstream).pipe(client);
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    sockets.add(client);
    sockets.add(upstream);
    upstream.on('error', () => {
      if (!client.destroyed) resetOrDestroy(client);
    });
    client.on('error', close);
    // A pair lives and dies together: a killed pod's half-closed watch must not keep its upstream open.
    client.on('close', () => {
      sockets.delete(client);
      close();
    });
    upstream.on('close', () => {
      sockets.delete(upstream);
      close();
    });
  }

  function open(ip: string, port: number, l: Omit<Listener, 'server'>): void {
    const key = `${ip}:${port}`;
    if (listeners.has(key)) return;
    const server = createServer((socket) => forward(key, listener, socket));
    const listener: Listener = { ...l, server };
    listeners.set(key, listener);
    server.on('error', (error) =>
      log(`service ${l.namespace}/${l.service}: cannot listen on ${key}: ${error.message}`),
    );
    server.listen(port, ip);
  }

  function reconcile(): void {
    scheduled = false;
    if (stopped) return;
    const wanted = new Set<string>();
    for (const svc of lifecycle.store.list(SERVICES.storageKey)) {
      const uid = svc.metadata.uid ?? '';
      const ip = stringAt(svc, 'spec', 'clusterIP');
      if (ip !== undefined && ip !== 'None') ipByUid.set(uid, ip);
      const ips = ip === undefined || ip === 'None' ? [] : [ip];
      if (stringAt(svc, 'spec', 'type') === 'LoadBalancer') ips.push(loadBalancer(svc));
      for (const p of arrayAt(svc, 'spec', 'ports').filter(isJsonObject)) {
        if ((p.protocol ?? 'TCP') !== 'TCP' || typeof p.port !== 'number') continue;
        for (const addr of ips) {
          wanted.add(`${addr}:${p.port}`);
          open(addr, p.port, {
            namespace: svc.metadata.namespace ?? '',
            service: svc.metadata.name ?? '',
            portName: String(p.name ?? ''),
          });
        }
      }
    }
    for (const [key, l] of listeners) {
      if (wanted.has(key)) continue;
      listeners.delete(key);
      l.server.close();
    }
  }

  function loadBalancer(svc: KubeObject): string {
    const uid = svc.metadata.uid ?? '';
    let ip = lbByUid.get(uid);
    if (ip === undefined) {
      ip = loadBalancerIPs.allocate();
      lbByUid.set(uid, ip);
    }
    const ingress = arrayAt(svc, 'status', 'loadBalancer', 'ingress');
    if (!(ingress.length === 1 && isJsonObject(ingress[0]) && ingress[0].ip === ip)) {
      const status = {
        ...(objectAt(svc, 'status') ?? {}),
        loadBalancer: { ingress: [{ ip, ipMode: 'VIP' }] },
      };
      try {
        lifecycle.update(SERVICES, { ...svc, status }, 'status');
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
      }
    }
    return ip;
  }

  const unsubscribe = lifecycle.store.subscribe((e) => {
    if (e.storageKey !== SERVICES.storageKey) return;
    if (e.type === 'DELETED') {
      const uid = e.object.metadata.uid ?? '';
      const lb = lbByUid.get(uid);
      if (lb !== undefined) loadBalancerIPs.release(lb);
      lbByUid.delete(uid);
      const ip = ipByUid.get(uid);
      if (ip !== undefined) clusterIPs.release(ip);
      ipByUid.delete(uid);
      for (const p of arrayAt(e.object, 'spec', 'ports').filter(isJsonObject)) {
        if (typeof p.nodePort === 'number') nodePorts.delete(p.nodePort);
      }
    }
    if (scheduled || stopped) return;
    scheduled = true;
    setImmediate(reconcile);
  });

  return {
    async stop() {
      stopped = true;
      unsubscribe();
      const closed = Promise.all(
        [...listeners.values()].map((l) => new Promise<void>((resolve) => l.server.close(() => resolve()))),
      );
      for (const socket of sockets) socket.destroy();
      await closed;
      listeners.clear();
    },
  };
}

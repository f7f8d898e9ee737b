// The job a cloud provider does for Services of type LoadBalancer: give each one an address from the cluster's
// pool (routed from the host to the node, where kube-proxy answers for it) and take it back when it goes. A
// Service naming an address (spec.loadBalancerIP) gets it when it is a free address of the pool; otherwise it
// stays pending, as with a cloud provider asked for an address it does not have.
import { type ApiEndpoint, asList, call, type Loose, type WatchStream, watch } from './kube-api.js';

export interface LoadBalancerController {
  stop(): void;
}

interface ServiceKey {
  key: string;
  ip?: string;
}

/** Addresses .10 to .250 of a /24. */
function poolOf(cidr: string): string[] {
  const prefix = cidr.split('/')[0]!.split('.').slice(0, 3).join('.');
  const out: string[] = [];
  for (let i = 10; i <= 250; i++) out.push(`${prefix}.${i}`);
  return out;
}

function isOurs(svc: Loose): boolean {
  // A Service naming a loadBalancerClass asks for another implementation, as with a cloud provider.
  return svc.spec?.type === 'LoadBalancer' && svc.spec?.loadBalancerClass === undefined;
}

export function startLoadBalancerController(
  api: ApiEndpoint,
  cidr: string,
  log: (line: string) => void,
): LoadBalancerController {
  const pool = poolOf(cidr);
  const assigned = new Map<string, string>(); // namespace/name → ip
  let stream: WatchStream | undefined;
  let stopped = false;

  const keyOf = (svc: Loose) => `${svc.metadata?.namespace}/${svc.metadata?.name}`;
  const currentIp = (svc: Loose): string | undefined => {
    const ip = asList(svc.status?.loadBalancer?.ingress)[0]?.ip;
    return typeof ip === 'string' && pool.includes(ip) ? ip : undefined;
  };

  async function setIngress(svc: Loose, ip: string | undefined): Promise<void> {
    const path = `/api/v1/namespaces/${svc.metadata?.namespace}/services/${svc.metadata?.name}/status`;
    const ingress = ip === undefined ? [] : [{ ip, ipMode: 'VIP' }];
    const reply = await call(
      api,
      'PATCH',
      path,
      { status: { loadBalancer: { ingress } } },
      {
        contentType: 'application/merge-patch+json',
      },
    );
    if (reply.status !== 200 && reply.status !== 404) {
      log(`load balancer: status of ${keyOf(svc)}: HTTP ${reply.status}`);
    }
  }

  /** A Service that asks for an address (spec.loadBalancerIP) gets that one, or none while it cannot. */
  async function reconcileRequested(svc: Loose, s: ServiceKey, wanted: string): Promise<void> {
    const others = new Set([...assigned].filter(([key]) => key !== s.key).map(([, ip]) => ip));
    if (!pool.includes(wanted) || others.has(wanted)) {
      log(`load balancer: ${s.key} asks for ${wanted}, not a free address of ${cidr}; it stays pending`);
      if (assigned.delete(s.key) || s.ip !== undefined) await setIngress(svc, undefined);
      return;
    }
    assigned.set(s.key, wanted);
    if (s.ip !== wanted) await setIngress(svc, wanted);
  }

  async function reconcile(type: string, svc: Loose): Promise<void> {
    const s: ServiceKey = { key: keyOf(svc), ip: currentIp(svc) };
    if (type === 'DELETED' || !isOurs(svc)) {
      if (assigned.delete(s.key) && type !== 'DELETED') await setIngress(svc, undefined);
      return;
    }
    const wanted = svc.spec?.loadBalancerIP;
    if (typeof wanted === 'string' && wanted !== '') return reconcileRequested(svc, s, wanted);
    if (s.ip !== undefined && assigned.get(s.key) === s.ip) return;
    const taken = new Set(assigned.values());
    const ip =
      s.ip !== undefined && !taken.has(s.ip) ? s.ip : pool.find((candidate) => !taken.has(candidate));
    if (ip === undefined) {
      log(`load balancer: pool ${cidr} is exhausted; ${s.key} stays pending`);
      return;
    }
    assigned.set(s.key, ip);
    if (s.ip !== ip) await setIngress(svc, ip);
  }

  // List, then watch from the list's version; a watch that ends (API server restart) starts over.
  async function loop(): Promise<void> {
    while (!stopped) {
      try {
        const list = await call(api, 'GET', '/api/v1/services');
        if (list.status !== 200) throw new Error(`list services: HTTP ${list.status}`);
        const items = asList(list.body.items);
        const present = new Set(items.filter(isOurs).map(keyOf));
        for (const key of [...assigned.keys()]) if (!present.has(key)) assigned.delete(key);
        for (const svc of items) await reconcile('ADDED', svc);
        const rv = String(list.body.metadata?.resourceVersion ?? '');
        stream = await watch(api, `/api/v1/services?watch=1&allowWatchBookmarks=true&resourceVersion=${rv}`);
        let queue = Promise.resolve();
        stream.onEvent((event) => {
          if (event.type === 'BOOKMARK' || event.type === 'ERROR') return;
          queue = queue
            .then(() => reconcile(event.type, event.object))
            .catch((e) => log(`load balancer: ${e}`));
        });
        await stream.ended;
        await queue;
      } catch (error) {
        if (!stopped) log(`load balancer: ${(error as Error).message}; retrying`);
      }
      if (!stopped) await new Promise((r) => setTimeout(r, 500));
    }
  }
  void loop();
  return {
    stop() {
      stopped = true;
      stream?.close();
    },
  };
}

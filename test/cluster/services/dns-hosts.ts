// The cluster DNS stand-in: a JSON hosts file (`<svc>.<ns>.svc.cluster.local` → clusterIP) that the pod
// preload module reads; rewritten atomically whenever Services change.
import { renameSync, writeFileSync } from 'node:fs';
import type { Lifecycle } from '../apiserver/lifecycle.js';
import { stringAt } from '../apiserver/object.js';

export function installDnsHosts(lifecycle: Lifecycle, hostsFile: string): () => void {
  let scheduled = false;
  let stopped = false;
  const write = () => {
    scheduled = false;
    if (stopped) return;
    const hosts: Record<string, string> = {};
    for (const svc of lifecycle.store.list('/services')) {
      const ip = stringAt(svc, 'spec', 'clusterIP');
      if (ip === undefined || ip === 'None') continue;
      hosts[`${svc.metadata.name}.${svc.metadata.namespace}.svc.cluster.local`] = ip;
    }
    const temp = `${hostsFile}.tmp`;
    writeFileSync(temp, JSON.stringify(hosts, null, 1));
    renameSync(temp, hostsFile);
  };
  write();
  const unsubscribe = lifecycle.store.subscribe((e) => {
    if (e.storageKey !== '/services' || scheduled) return;
    scheduled = true;
    setImmediate(write);
  });
  return () => {
    stopped = true;
    unsubscribe();
  };
}

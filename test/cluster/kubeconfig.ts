// The kubeconfig file clients (kubectl, @kubernetes/client-node) use to reach the simulator.
import { writeFileSync } from 'node:fs';
import { stringify } from 'yaml';

export function writeKubeconfig(path: string, server: string, caPem: string, token: string): void {
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'portico-sim',
        cluster: { server, 'certificate-authority-data': Buffer.from(caPem).toString('base64') },
      },
    ],
    users: [{ name: 'admin', user: { token } }],
    contexts: [
      { name: 'portico-sim', context: { cluster: 'portico-sim', user: 'admin', namespace: 'default' } },
    ],
    'current-context': 'portico-sim',
  };
  writeFileSync(path, stringify(config), { mode: 0o600 });
}

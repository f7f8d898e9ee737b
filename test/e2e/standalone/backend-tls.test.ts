// BackendTLSPolicy in standalone mode: a policy and its CA ConfigMap in YAML files make the Gateway's proxy speak
// TLS to an HTTPS backend, the policy's status names the Gateway, and once the CA ConfigMap goes the backend fails
// closed (503) instead of being reached in plaintext.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { selfSigned } from '../../support/certs.js';
import {
  adminResources,
  eventually,
  exampleCopy,
  localServiceYaml,
  programmedAddress,
  send,
  startStandalone,
} from './harness.js';

const cert = selfSigned('secure.example.com', ['secure.example.com']);

function files(port: number, withCa: boolean): string {
  const ca = withCa
    ? `---
apiVersion: v1
kind: ConfigMap
metadata: {name: secure-ca, namespace: default}
data:
  ca.crt: ${JSON.stringify(cert.certificatePem)}
`
    : '';
  return `${localServiceYaml('secure', 443, port, 'https')}---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: secure, namespace: default}
spec:
  parentRefs: [{name: eg}]
  hostnames: [secure.example.com]
  rules: [{backendRefs: [{name: secure, port: 443}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: secure, namespace: default}
spec:
  targetRefs: [{group: "", kind: Service, name: secure, sectionName: https}]
  validation:
    hostname: secure.example.com
    caCertificateRefs: [{group: "", kind: ConfigMap, name: secure-ca}]
${ca}`;
}

test('a BackendTLSPolicy file: TLS to the backend, status on the policy, fail closed once its CA goes', async (t) => {
  const server = createServer({ cert: cert.certificatePem, key: cert.privateKeyPem }, (req, res) =>
    res.end(`tls ${(req.socket as { servername?: string }).servername}`),
  );
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => server.close());
  const port = (server.address() as AddressInfo).port;

  const { files: dir, stateDir } = await exampleCopy(t, 'quickstart', ['web', 'api']);
  const file = join(dir, 'secure.yaml');
  await writeFile(file, files(port, true));
  const c = await startStandalone(t, { args: ['-f', dir], pool: '127.0.45.0/24', stateDir });
  const address = await programmedAddress(c.admin, 'default', 'eg');
  const reply = await eventually('the TLS backend through the proxy', async () => {
    const r = await send(address, 8080, 'secure.example.com').catch(() => undefined);
    return r?.status === 200 ? r : undefined;
  });
  assert.equal(reply.body, 'tls secure.example.com');
  const policy = (await adminResources(c.admin)).find((r) => r.kind === 'BackendTLSPolicy');
  const ancestors = (
    policy?.status as {
      ancestors?: { ancestorRef: { name: string }; conditions: { type: string; status: string }[] }[];
    }
  )?.ancestors;
  assert.equal(ancestors?.[0]?.ancestorRef.name, 'eg');
  assert.deepEqual(
    ancestors?.[0]?.conditions.map((c) => `${c.type}=${c.status}`),
    ['Accepted=True', 'ResolvedRefs=True'],
  );

  await writeFile(file, files(port, false));
  await eventually('the backend failing closed', async () => {
    const r = await send(address, 8080, 'secure.example.com').catch(() => undefined);
    return r?.status === 503 ? r : undefined;
  });
});

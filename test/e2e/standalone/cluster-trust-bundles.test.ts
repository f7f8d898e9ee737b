// ClusterTrustBundles (GEP-5075) in standalone files through the real proxy: a Gateway checks client certificates
// against a CA given only by a bundle (another CA's client is refused, and a changed bundle changes who gets in),
// and a BackendTLSPolicy verifies its HTTPS backend with a bundle's CA: another CA's bundle fails the handshake
// (502), a bundle with no certificate fails closed (503) with the policy's conditions saying why.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { certificateAuthority, selfSigned, type TestCertificate } from '../../support/certs.js';
import { statusWithClientCertificate } from '../../support/http.js';
import {
  adminResources,
  echo,
  eventually,
  exampleCopy,
  localServiceYaml,
  programmedAddress,
  send,
  startStandalone,
} from './harness.js';

const server = selfSigned('mtls.example.com', ['mtls.example.com']);
const corp = certificateAuthority('corp clients');
const other = certificateAuthority('other clients');
const corpClient = corp.issueClient('alice');
const otherClient = other.issueClient('mallory');

function bundleYaml(name: string, pem: string): string {
  return `apiVersion: certificates.k8s.io/v1beta1
kind: ClusterTrustBundle
metadata: {name: "${name}"}
spec:
  signerName: example.com/clients
  trustBundle: ${JSON.stringify(pem)}
`;
}

function mtlsGateway(backendPort: number, roots: string): string {
  return `${localServiceYaml('app', 3000, backendPort)}---
apiVersion: v1
kind: Secret
metadata: {name: mtls-server, namespace: default}
type: kubernetes.io/tls
stringData:
  tls.crt: ${JSON.stringify(server.certificatePem)}
  tls.key: ${JSON.stringify(server.privateKeyPem)}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: mtls, namespace: default}
spec:
  gatewayClassName: portico
  tls:
    frontend:
      default:
        validation:
          caCertificateRefs: [{group: certificates.k8s.io, kind: ClusterTrustBundle, name: "example.com:clients:v1"}]
  listeners:
  - {name: https, protocol: HTTPS, port: 8443, tls: {certificateRefs: [{name: mtls-server}]}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: app, namespace: default}
spec:
  parentRefs: [{name: mtls}]
  rules: [{backendRefs: [{name: app, port: 3000}]}]
---
${bundleYaml('example.com:clients:v1', roots)}`;
}

/** The status code of a GET with `client`'s certificate, or the error that ended it. */
function withClientCertificate(address: string, client: TestCertificate): Promise<number | Error> {
  const target = { address, port: 8443, servername: 'mtls.example.com', ca: server.certificatePem };
  return statusWithClientCertificate(target, client);
}

test('frontend validation from a ClusterTrustBundle: its CA’s client in, another refused, a new bundle obeyed', async (t) => {
  const { files: dir, stateDir } = await exampleCopy(t, 'quickstart', ['web', 'api']);
  const backend = await echo(t, 'app');
  const file = join(dir, 'mtls.yaml');
  await writeFile(file, mtlsGateway(backend, corp.ca.certificatePem));
  const c = await startStandalone(t, { args: ['-f', dir], pool: '127.0.137.0/24', stateDir });
  const address = await programmedAddress(c.admin, 'default', 'mtls');
  await eventually('the bundle CA’s client let in', async () =>
    (await withClientCertificate(address, corpClient)) === 200 ? true : undefined,
  );
  const refused = await withClientCertificate(address, otherClient);
  assert.ok(refused instanceof Error, `another CA's client got ${String(refused)}`);
  const gateway = (await adminResources(c.admin)).find(
    (r) => r.kind === 'Gateway' && r.metadata.name === 'mtls',
  );
  const listener = (gateway?.status as { listeners?: { conditions: { type: string; status: string }[] }[] })
    ?.listeners?.[0];
  assert.deepEqual(
    listener?.conditions.filter((x) => x.type === 'ResolvedRefs').map((x) => x.status),
    ['True'],
  );

  // The bundle now holds the other CA only: who gets in follows it.
  await writeFile(file, mtlsGateway(backend, other.ca.certificatePem));
  await eventually('the new bundle’s client let in', async () =>
    (await withClientCertificate(address, otherClient)) === 200 ? true : undefined,
  );
  assert.ok(
    (await withClientCertificate(address, corpClient)) instanceof Error,
    'the old CA’s client refused',
  );
});

const backendCert = selfSigned('secure.example.com', ['secure.example.com']);
const wrongCert = selfSigned('secure.example.com', ['secure.example.com']);

function backendTls(port: number, roots: string): string {
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
  targetRefs: [{group: "", kind: Service, name: secure}]
  validation:
    hostname: secure.example.com
    caCertificateRefs: [{group: certificates.k8s.io, kind: ClusterTrustBundle, name: backend-roots}]
---
${bundleYaml('backend-roots', roots)}`;
}

test('a BackendTLSPolicy trusting a ClusterTrustBundle reaches its TLS backend, a wrong bundle 502 and an invalid one 503', async (t) => {
  const tlsServer = createServer(
    { cert: backendCert.certificatePem, key: backendCert.privateKeyPem },
    (_, res) => res.end('verified'),
  );
  tlsServer.listen(0, '127.0.0.1');
  await once(tlsServer, 'listening');
  t.after(() => tlsServer.close());
  const port = (tlsServer.address() as AddressInfo).port;

  const { files: dir, stateDir } = await exampleCopy(t, 'quickstart', ['web', 'api']);
  const file = join(dir, 'secure.yaml');
  await writeFile(file, backendTls(port, backendCert.certificatePem));
  const c = await startStandalone(t, { args: ['-f', dir], pool: '127.0.138.0/24', stateDir });
  const address = await programmedAddress(c.admin, 'default', 'eg');
  const reply = await eventually('the TLS backend through the proxy', async () => {
    const r = await send(address, 8080, 'secure.example.com').catch(() => undefined);
    return r?.status === 200 ? r : undefined;
  });
  assert.equal(reply.body, 'verified');
  const policy = (await adminResources(c.admin)).find((r) => r.kind === 'BackendTLSPolicy');
  const ancestors = (policy?.status as { ancestors?: { conditions: { type: string; status: string }[] }[] })
    ?.ancestors;
  assert.deepEqual(
    ancestors?.[0]?.conditions.map((x) => `${x.type}=${x.status}`),
    ['Accepted=True', 'ResolvedRefs=True'],
  );

  // A bundle of another CA: the backend's certificate no longer verifies, the handshake fails (502).
  await writeFile(file, backendTls(port, wrongCert.certificatePem));
  await eventually('the backend refused with the wrong bundle', async () => {
    const r = await send(address, 8080, 'secure.example.com').catch(() => undefined);
    return r?.status === 502 ? r : undefined;
  });
  // A bundle holding no certificate: the reference is invalid and the backend fails closed, never tried (503).
  await writeFile(file, backendTls(port, 'not a certificate'));
  await eventually('the backend failing closed with an invalid bundle', async () => {
    const r = await send(address, 8080, 'secure.example.com').catch(() => undefined);
    return r?.status === 503 ? r : undefined;
  });
  const invalid = (await adminResources(c.admin)).find((r) => r.kind === 'BackendTLSPolicy');
  const conditions = (invalid?.status as { ancestors?: { conditions: { type: string; reason: string }[] }[] })
    ?.ancestors?.[0]?.conditions;
  assert.deepEqual(
    conditions?.map((x) => `${x.type}=${x.reason}`),
    ['Accepted=NoValidCACertificate', 'ResolvedRefs=InvalidCACertificateRef'],
  );
});

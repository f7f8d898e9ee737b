// ClusterTrustBundles (GEP-5075) on the real cluster, served by its API server (certificates.k8s.io/v1beta1): a
// Gateway checks client certificates against a CA given only by a bundle the controller watches; another CA's
// client is refused, and a changed bundle changes who gets in, with no restart.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_CONTROLLER_NAME } from '../../../../src/api/controller-config.js';
import type { Cluster } from '../../../cluster/harness.js';
import { asList, call, eventually } from '../../../cluster/kube-api.js';
import { certificateAuthority, selfSigned, type TestCertificate } from '../../../support/certs.js';
import { statusWithClientCertificate } from '../../../support/http.js';
import { E2E_SKIP, trackClusterObject } from '../install.js';
import {
  apply,
  echoNamespace,
  gatewayClass,
  gatewayOf,
  gatewayStatus,
  programmedAddress,
  smallProxies,
} from '../traffic.js';

const NS = 'trust-bundles';
/** The Gateway's name, unique among the suites: in Controller Namespace Mode its pods share the controller's. */
const GATEWAY = 'bundles';
const SIGNER = 'e2e.portico.io/clients';
/** A bundle with a signer is named for it: the signer's `/` as `:`, then a suffix. */
const BUNDLE = 'e2e.portico.io:clients:v1';
const server = selfSigned('mtls.example.com', ['mtls.example.com']);
const corp = certificateAuthority('corp clients');
const other = certificateAuthority('other clients');
const corpClient = corp.issueClient('alice');
const otherClient = other.issueClient('mallory');
let cluster: Cluster;

function bundle(pem: string) {
  return apply(cluster, {
    apiVersion: 'certificates.k8s.io/v1beta1',
    kind: 'ClusterTrustBundle',
    metadata: { name: BUNDLE },
    spec: { signerName: SIGNER, trustBundle: pem },
  } as never);
}

/** Runs in the file's before(), once Portico is installed. */
export async function setup(c: Cluster): Promise<void> {
  cluster = c;
  await gatewayClass(cluster, 'portico', DEFAULT_CONTROLLER_NAME);
  await echoNamespace(cluster, NS);
  trackClusterObject(`/apis/certificates.k8s.io/v1beta1/clustertrustbundles/${BUNDLE}`);
  await bundle(corp.ca.certificatePem);
  await apply(cluster, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'mtls-server', namespace: NS },
    type: 'kubernetes.io/tls',
    stringData: { 'tls.crt': server.certificatePem, 'tls.key': server.privateKeyPem },
  } as never);
  await smallProxies(cluster, NS, 'small');
  const trustBundleRef = { group: 'certificates.k8s.io', kind: 'ClusterTrustBundle', name: BUNDLE };
  await gatewayOf(
    cluster,
    NS,
    GATEWAY,
    {
      gatewayClassName: 'portico',
      tls: { frontend: { default: { validation: { caCertificateRefs: [trustBundleRef] } } } },
      listeners: [
        { name: 'https', protocol: 'HTTPS', port: 443, tls: { certificateRefs: [{ name: 'mtls-server' }] } },
      ],
    },
    'small',
  );
  await apply(cluster, {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name: 'app', namespace: NS },
    spec: { parentRefs: [{ name: GATEWAY }], rules: [{ backendRefs: [{ name: 'echo', port: 8080 }] }] },
  } as never);
}

/** The status code of a GET with `client`'s certificate, or the error that ended it. */
function withClientCertificate(address: string, client: TestCertificate): Promise<number | Error> {
  const target = { address, port: 443, servername: 'mtls.example.com', ca: server.certificatePem };
  return statusWithClientCertificate(target, client);
}

test('frontend validation from a ClusterTrustBundle on the cluster: its CA’s client in, another refused, a changed bundle obeyed', {
  skip: E2E_SKIP,
}, async () => {
  const address = await programmedAddress(cluster, NS, GATEWAY, 120_000);
  await eventually(
    async () => ((await withClientCertificate(address, corpClient)) === 200 ? true : undefined),
    'the bundle CA’s client let in',
    60_000,
  );
  const refused = await withClientCertificate(address, otherClient);
  assert.ok(refused instanceof Error, `another CA's client got ${String(refused)}`);
  const listener = asList((await gatewayStatus(cluster, NS, GATEWAY)).status?.listeners)[0];
  const resolved = asList(listener?.conditions).find((c) => c.type === 'ResolvedRefs');
  assert.equal(resolved?.status, 'True', JSON.stringify(listener));

  // The bundle now holds the other CA only: the controller's watch carries it to the proxies.
  await bundle(other.ca.certificatePem);
  await eventually(
    async () => ((await withClientCertificate(address, otherClient)) === 200 ? true : undefined),
    'the changed bundle’s client let in',
    60_000,
  );
  assert.ok(
    (await withClientCertificate(address, corpClient)) instanceof Error,
    'the old CA’s client refused',
  );

  // Its proxy goes: the suites after this need the node's CPU.
  await call(cluster, 'DELETE', `/apis/gateway.networking.k8s.io/v1/namespaces/${NS}/gateways/${GATEWAY}`);
});

// The controller reads the Gateway API CRDs' bundle versions by name and whether ClusterTrustBundles are served,
// says what changed in its log, and wakes a pass only when they changed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Logger } from '../../../src/platform/log-line.js';
import { readInstalledCrds, watchInstalledCrds } from '../../../src/provider/kubernetes/installed-crds.js';
import { createFakeKubernetesApi, type FakeKubernetesApi } from '../../support/fake-kubernetes-api.js';

const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';

/** Installs (or upgrades) the CRDs of `plurals` (Gateway API resources) at bundle `version`. */
function installCrds(api: FakeKubernetesApi, version: string, plurals: readonly string[]): void {
  for (const plural of plurals) {
    const name = `${plural}.gateway.networking.k8s.io`;
    api.objects.set(`${CRDS}/${name}`, {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name, annotations: { 'gateway.networking.k8s.io/bundle-version': version } },
    });
  }
}

function recordingLog(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const add = (level: string) => (message: string) => lines.push(`${level} ${message}`);
  return { lines, debug: add('debug'), info: add('info'), warn: add('warn'), error: add('error') };
}

const names = ['gatewayclasses', 'gateways', 'listenersets', 'httproutes', 'grpcroutes', 'referencegrants'];

test('each CRD Portico reads is asked for by name; a missing one reads as null', async () => {
  const api = createFakeKubernetesApi();
  installCrds(
    api,
    'v1.7.0',
    names.filter((n) => n !== 'grpcroutes'),
  );
  const installed = await readInstalledCrds(api.client);
  assert.deepEqual(installed?.versions, {
    gatewayclasses: 'v1.7.0',
    gateways: 'v1.7.0',
    listenersets: 'v1.7.0',
    httproutes: 'v1.7.0',
    grpcroutes: null,
    referencegrants: 'v1.7.0',
  });
  assert.equal(installed?.clusterTrustBundles, false, 'no discovery document: not served');
  assert.deepEqual(
    api.requests.map((r) => `${r.method} ${r.path}`),
    [
      ...names.map(
        (n) => `GET /apis/apiextensions.k8s.io/v1/customresourcedefinitions/${n}.gateway.networking.k8s.io`,
      ),
      'GET /apis/certificates.k8s.io/v1beta1',
    ],
  );
});

test('ClusterTrustBundles are served when the discovery document of certificates.k8s.io/v1beta1 lists them', async () => {
  let resources: string[] = [];
  const api = createFakeKubernetesApi((request) =>
    request.bare === '/apis/certificates.k8s.io/v1beta1'
      ? {
          status: 200,
          body: {
            kind: 'APIResourceList',
            groupVersion: 'certificates.k8s.io/v1beta1',
            resources: resources.map((name) => ({ name, namespaced: false })),
          },
        }
      : undefined,
  );
  installCrds(api, 'v1.7.0', names);
  resources = ['podcertificaterequests'];
  assert.equal((await readInstalledCrds(api.client))?.clusterTrustBundles, false);
  resources = ['clustertrustbundles', 'podcertificaterequests'];
  assert.equal((await readInstalledCrds(api.client))?.clusterTrustBundles, true);
});

test('older CRDs are a warning naming the version; an upgrade is a line and a pass; no change, no pass', async () => {
  const api = createFakeKubernetesApi();
  installCrds(api, 'v1.6.3', names);
  const requests = api.requests;
  const log = recordingLog();
  let passes = 0;
  const watch = watchInstalledCrds({
    client: api.client,
    log,
    onChange: () => passes++,
    intervalMs: 10,
  });
  await watch.start();
  try {
    assert.equal(watch.current()?.versions.gateways, 'v1.6.3');
    assert.equal(passes, 1);
    assert.match(log.lines[0] ?? '', /^warn Gateway API CRDs older than v1\.7\.0.*v1\.6\.3/);
    installCrds(api, 'v1.7.0', names);
    while (watch.current()?.versions.gateways !== 'v1.7.0') await new Promise((r) => setTimeout(r, 5));
    assert.equal(passes, 2);
    assert.match(log.lines[1] ?? '', /^info Gateway API CRDs v1\.7\.0/);
    // Three more reads that find the same versions change nothing.
    const seen = requests.length;
    while (requests.length < seen + 3 * (names.length + 1)) await new Promise((r) => setTimeout(r, 5));
    assert.equal(passes, 2);
    assert.equal(log.lines.length, 2);
  } finally {
    watch.stop();
  }
});

test('a refused read (RBAC) keeps what was known and warns once', async () => {
  const log = recordingLog();
  let reads = 0;
  const { client } = createFakeKubernetesApi(() => {
    reads++;
    return { status: 403, body: {} };
  });
  const watch = watchInstalledCrds({ client, log, onChange: () => assert.fail('no change'), intervalMs: 5 });
  await watch.start();
  while (reads < 4) await new Promise((r) => setTimeout(r, 5));
  watch.stop();
  assert.equal(watch.current(), undefined);
  assert.equal(log.lines.length, 1);
  assert.match(log.lines[0] ?? '', /^warn cannot read the Gateway API CRDs/);
});

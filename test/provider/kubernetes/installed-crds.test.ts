// The controller reads the Gateway API CRDs' bundle versions by name, says what changed in its log, and wakes a
// pass only when they changed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Logger } from '../../../src/platform/log-line.js';
import type { ApiClient, ApiReply } from '../../../src/provider/kubernetes/api-client.js';
import { readInstalledCrds, watchInstalledCrds } from '../../../src/provider/kubernetes/installed-crds.js';

/** An API server whose CRDs are `crds` (name → bundle version; absent: not installed). */
function fakeClient(crds: Map<string, string>, requests: string[] = []): ApiClient {
  return {
    async request(method, path): Promise<ApiReply> {
      requests.push(`${method} ${path}`);
      const name = path.split('/').pop() ?? '';
      const version = crds.get(name);
      if (version === undefined) return { status: 404, body: {} };
      return {
        status: 200,
        body: { metadata: { name, annotations: { 'gateway.networking.k8s.io/bundle-version': version } } },
      };
    },
    watch() {
      throw new Error('not watched here');
    },
  };
}

function recordingLog(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const add = (level: string) => (message: string) => lines.push(`${level} ${message}`);
  return { lines, debug: add('debug'), info: add('info'), warn: add('warn'), error: add('error') };
}

const names = ['gatewayclasses', 'gateways', 'listenersets', 'httproutes', 'grpcroutes', 'referencegrants'];

test('each CRD Portico reads is asked for by name; a missing one reads as null', async () => {
  const requests: string[] = [];
  const crds = new Map(names.map((n) => [`${n}.gateway.networking.k8s.io`, 'v1.7.0']));
  crds.delete('grpcroutes.gateway.networking.k8s.io');
  const installed = await readInstalledCrds(fakeClient(crds, requests));
  assert.deepEqual(installed?.versions, {
    gatewayclasses: 'v1.7.0',
    gateways: 'v1.7.0',
    listenersets: 'v1.7.0',
    httproutes: 'v1.7.0',
    grpcroutes: null,
    referencegrants: 'v1.7.0',
  });
  assert.deepEqual(
    requests,
    names.map(
      (n) => `GET /apis/apiextensions.k8s.io/v1/customresourcedefinitions/${n}.gateway.networking.k8s.io`,
    ),
  );
});

test('older CRDs are a warning naming the version; an upgrade is a line and a pass; no change, no pass', async () => {
  const crds = new Map(names.map((n) => [`${n}.gateway.networking.k8s.io`, 'v1.6.3']));
  const log = recordingLog();
  const requests: string[] = [];
  let passes = 0;
  const watch = watchInstalledCrds({
    client: fakeClient(crds, requests),
    log,
    onChange: () => passes++,
    intervalMs: 10,
  });
  await watch.start();
  try {
    assert.equal(watch.current()?.versions.gateways, 'v1.6.3');
    assert.equal(passes, 1);
    assert.match(log.lines[0] ?? '', /^warn Gateway API CRDs older than v1\.7\.0.*v1\.6\.3/);
    for (const n of names) crds.set(`${n}.gateway.networking.k8s.io`, 'v1.7.0');
    while (watch.current()?.versions.gateways !== 'v1.7.0') await new Promise((r) => setTimeout(r, 5));
    assert.equal(passes, 2);
    assert.match(log.lines[1] ?? '', /^info Gateway API CRDs v1\.7\.0/);
    // Three more reads that find the same versions change nothing.
    const seen = requests.length;
    while (requests.length < seen + 3 * names.length) await new Promise((r) => setTimeout(r, 5));
    assert.equal(passes, 2);
    assert.equal(log.lines.length, 2);
  } finally {
    watch.stop();
  }
});

test('a refused read (RBAC) keeps what was known and warns once', async () => {
  const log = recordingLog();
  let reads = 0;
  const client: ApiClient = {
    async request(): Promise<ApiReply> {
      reads++;
      return { status: 403, body: {} };
    },
    watch() {
      throw new Error('not watched here');
    },
  };
  const watch = watchInstalledCrds({ client, log, onChange: () => assert.fail('no change'), intervalMs: 5 });
  await watch.start();
  while (reads < 4) await new Promise((r) => setTimeout(r, 5));
  watch.stop();
  assert.equal(watch.current(), undefined);
  assert.equal(log.lines.length, 1);
  assert.match(log.lines[0] ?? '', /^warn cannot read the Gateway API CRDs/);
});

// Every feature a GatewayClass claims exists in the Gateway API release the conformance suite is pinned to:
// a feature that release removed (v1.7 removed HTTPRouteRetry and HTTPRouteRetryBackendTimeout) or renamed
// must leave the claim, or the suite would test, and the report show, a name that no longer means anything.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { supportedFeatures } from '../../src/translate/features.js';
import { readManifest } from '../../toolchain/manifest.js';

/** The feature names of the pinned release (`pkg/features/*.go` of sigs.k8s.io/gateway-api). */
function releaseFeatures(): Set<string> {
  // The manifest names the release's standard CRDs: <module>/config/crd/standard.
  const dir = join(readManifest().files.gatewayApiCrds, '..', '..', '..', 'pkg', 'features');
  const names = new Set<string>();
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.go') && !f.endsWith('_test.go'))) {
    for (const m of readFileSync(join(dir, file), 'utf8').matchAll(
      /\bSupport[A-Za-z0-9]+\s+(?:FeatureName\s+)?=\s+"([A-Za-z0-9]+)"/g,
    )) {
      names.add(m[1] as string);
    }
  }
  return names;
}

test('every claimed feature is one the pinned Gateway API release defines, in both modes and channels', () => {
  const known = releaseFeatures();
  assert.ok(known.has('HTTPRoute') && known.size > 40, `read ${known.size} features`);
  for (const mode of ['ControllerNamespace', 'GatewayNamespace'] as const) {
    for (const experimental of [false, true])
      for (const feature of supportedFeatures(mode, { experimental, clusterTrustBundles: true }))
        assert.ok(known.has(feature), `${mode}: ${feature}`);
  }
});

test('address routability and listener filters are claimed only over the experimental CRDs, which keep their fields', () => {
  for (const mode of ['ControllerNamespace', 'GatewayNamespace'] as const) {
    for (const feature of [
      'GatewayAddressRoutability',
      'GatewayAddressRoutabilityCluster',
      'GatewayListenerFilters',
    ]) {
      assert.ok(
        !supportedFeatures(mode, { experimental: false, clusterTrustBundles: true }).includes(feature),
        feature,
      );
      assert.ok(
        supportedFeatures(mode, { experimental: true, clusterTrustBundles: false }).includes(feature),
        feature,
      );
    }
  }
});

test('ClusterTrustBundle is claimed only where the API server serves the kind, whatever the CRD channel', () => {
  for (const mode of ['ControllerNamespace', 'GatewayNamespace'] as const) {
    for (const experimental of [false, true]) {
      assert.ok(
        supportedFeatures(mode, { experimental, clusterTrustBundles: true }).includes('ClusterTrustBundle'),
      );
      assert.ok(
        !supportedFeatures(mode, { experimental, clusterTrustBundles: false }).includes('ClusterTrustBundle'),
      );
    }
  }
});

test('the features v1.7 removed are not claimed', () => {
  for (const mode of ['ControllerNamespace', 'GatewayNamespace'] as const) {
    const claimed = supportedFeatures(mode, { experimental: true, clusterTrustBundles: true });
    for (const removed of [
      'HTTPRouteRetry',
      'HTTPRouteRetryBackendTimeout',
      'HTTPRouteBackendRequestRedirect',
    ]) {
      assert.ok(!claimed.includes(removed), `${mode}: ${removed}`);
    }
  }
});

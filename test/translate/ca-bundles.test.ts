// CA references to ClusterTrustBundles (GEP-5075) as pure logic: the kind unknown where the cluster does not serve
// it (InvalidKind, not InvalidCACertificateRef), no ReferenceGrant asked, and the bundle's PEM used as it is.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { BackendTLSPolicy } from '../../src/api/backend-tls-policy.js';
import type { ClusterTrustBundle } from '../../src/api/core.js';
import { indexBackendTlsPolicies } from '../../src/translate/backend-tls.js';
import { caBundle } from '../../src/translate/ca-bundles.js';
import { selfSigned } from '../support/certs.js';

const REF = { group: 'certificates.k8s.io', kind: 'ClusterTrustBundle', name: 'roots' };
const PEM = selfSigned('roots', ['roots.example.com']).certificatePem;

function bundle(trustBundle: string): ClusterTrustBundle {
  return {
    apiVersion: 'certificates.k8s.io/v1beta1',
    kind: 'ClusterTrustBundle',
    metadata: { name: 'roots', generation: 1 },
    spec: { trustBundle },
  };
}

const POLICY: BackendTLSPolicy = {
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'BackendTLSPolicy',
  metadata: { name: 'tls', namespace: 'apps', generation: 1 },
  spec: {
    targetRefs: [{ group: '', kind: 'Service', name: 'secure' }],
    validation: { hostname: 'secure.example.com', caCertificateRefs: [REF] },
  },
};

const refused = () => {
  throw new Error('a ClusterTrustBundle needs no ReferenceGrant');
};

describe('ClusterTrustBundle CA references', () => {
  it('resolve to the bundle, asking no ReferenceGrant', () => {
    const sources = { configMaps: new Map(), clusterTrustBundles: new Map([['roots', bundle(PEM)]]) };
    const result = caBundle([REF], 'at', 'apps', sources, refused);
    assert.deepEqual(result, { pem: PEM, problems: [] });
  });

  it('name an unknown kind where the cluster does not serve ClusterTrustBundles', () => {
    const result = caBundle(
      [REF],
      'at',
      'apps',
      { configMaps: new Map(), clusterTrustBundles: undefined },
      refused,
    );
    assert.equal(result.pem, undefined);
    assert.deepEqual(result.problems, [
      {
        kind: 'kind',
        message: 'at[0]: ClusterTrustBundle (certificates.k8s.io) is not served by the API server',
      },
    ]);
    const [verdict] = indexBackendTlsPolicies([POLICY], {
      configMaps: new Map(),
      clusterTrustBundles: undefined,
    }).verdicts;
    assert.equal(verdict?.resolvedRefs.reason, 'InvalidKind');
    assert.equal(verdict?.accepted.reason, 'NoValidCACertificate');
    assert.ok(verdict?.tls.refused !== undefined, 'its targets fail closed');
  });

  it('refuse a bundle whose PEM block does not parse', () => {
    const sources = {
      configMaps: new Map(),
      clusterTrustBundles: new Map([
        ['roots', bundle(`${PEM}-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n`)],
      ]),
    };
    const result = caBundle([REF], 'at', 'apps', sources, refused);
    assert.equal(result.pem, undefined);
    assert.equal(
      result.problems[0]?.message,
      'at[0]: ClusterTrustBundle roots spec.trustBundle certificate 2 does not parse',
    );
  });
});

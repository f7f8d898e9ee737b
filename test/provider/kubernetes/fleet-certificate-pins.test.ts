import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { test } from 'node:test';
import type { Secret } from '../../../src/api/core.js';
import { generateCertificates, issueFleetCertificate } from '../../../src/certificates/certs.js';
import { fleetClientSecretName } from '../../../src/infra/kubernetes/render.js';
import { fleetInfraName } from '../../../src/ir/fleet-infra.js';
import type { JsonObject } from '../../../src/provider/kubernetes/api-client.js';
import { fleetCertificatePins } from '../../../src/provider/kubernetes/fleet-certificate-pins.js';
import { secretEssentials } from '../../../src/provider/kubernetes/secret-essentials.js';

const ca = generateCertificates({ namespace: 'sys' });
const MANAGED = { 'app.kubernetes.io/managed-by': 'portico-gateway' };
const secretNameOf = (fleet: string) => fleetClientSecretName(fleetInfraName(fleet));
const fp = (pem: string) => new X509Certificate(pem).fingerprint256;

function secret(name: string, certPem: string, extra: Partial<Secret['metadata']> = {}): Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'kubernetes.io/tls',
    metadata: { name, namespace: 'sys', generation: 1, labels: MANAGED, ...extra },
    data: { 'tls.crt': Buffer.from(certPem).toString('base64') },
  };
}

test("each fleet's pin is the certificate in its own Secret, with a renewal's predecessor until its recorded time", () => {
  const eg = issueFleetCertificate(ca.caCertPem, ca.caKeyPem, 'default/eg');
  const old = issueFleetCertificate(ca.caCertPem, ca.caKeyPem, 'default/eg');
  const merged = issueFleetCertificate(ca.caCertPem, ca.caKeyPem, 'merged');
  const pins = fleetCertificatePins(
    [
      secret(secretNameOf('default/eg'), eg.certPem, {
        annotations: {
          'gateway.portico.io/previous-client-certificate-sha256': fp(old.certPem),
          'gateway.portico.io/previous-client-certificate-until': '2030-01-01T00:00:00.000Z',
        },
      }),
      secret(secretNameOf('merged'), merged.certPem),
    ],
    'sys',
  );
  assert.deepEqual(pins.get('default/eg'), {
    current: fp(eg.certPem),
    previous: { fingerprint: fp(old.certPem), until: Date.parse('2030-01-01T00:00:00.000Z') },
  });
  assert.deepEqual(pins.get('merged'), { current: fp(merged.certPem) });
  assert.equal(pins.size, 2);
});

test('a Secret speaks only for the fleet it is named for, in the controller namespace, when Portico manages it', () => {
  const eg = issueFleetCertificate(ca.caCertPem, ca.caKeyPem, 'default/eg');
  const name = secretNameOf('default/eg');
  const none = fleetCertificatePins(
    [
      secret(secretNameOf('default/other'), eg.certPem),
      secret(name, eg.certPem, { namespace: 'tenant' }),
      secret(name, eg.certPem, { labels: {} }),
      secret(name, 'not a certificate'),
    ],
    'sys',
  );
  assert.equal(none.size, 0);
});

test("the watch keeps Portico's renewal record of a Secret, and no other annotation", () => {
  const kept = secretEssentials({
    metadata: {
      name: 'x',
      annotations: {
        'gateway.portico.io/previous-client-certificate-sha256': 'AB:CD',
        'gateway.portico.io/previous-client-certificate-until': '2030-01-01T00:00:00.000Z',
        'kubectl.kubernetes.io/last-applied-configuration': '{"data":{}}',
      },
    },
    data: {},
  });
  assert.deepEqual((kept.metadata as JsonObject).annotations, {
    'gateway.portico.io/previous-client-certificate-sha256': 'AB:CD',
    'gateway.portico.io/previous-client-certificate-until': '2030-01-01T00:00:00.000Z',
  });
});

import assert from 'node:assert/strict';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { test } from 'node:test';
import { fleetOfSubjectAltName, generateCertificates } from '../../../src/certificates/certs.js';
import type { FleetInfra } from '../../../src/ir/fleet-infra.js';
import { discardingLogger } from '../../../src/platform/log-line.js';
import type { JsonObject } from '../../../src/provider/kubernetes/api-client.js';
import { createFleetClientSecrets } from '../../../src/provider/kubernetes/fleet-client-secrets.js';
import { createFakeKubernetesApi, objectsIn } from '../../support/fake-kubernetes-api.js';

const ca = generateCertificates({ namespace: 'sys' });
const authority = { caCertPem: ca.caCertPem, caKeyPem: ca.caKeyPem };
const INFRA: FleetInfra = {
  fleet: 'default/eg',
  name: 'proxy-default-eg-e41e7b31',
  namespace: 'sys',
  labels: { 'app.kubernetes.io/managed-by': 'portico-gateway', 'app.kubernetes.io/name': 'portico-proxy' },
  propagated: { labels: {}, annotations: {} },
  gateways: ['default/eg'],
  ports: [],
};
const ACCOUNT = { name: INFRA.name, uid: 'sa-uid-1' };
const NAME = 'proxy-default-eg-e41e7b31-client-cert';

const SECRETS = '/api/v1/namespaces/sys/secrets';

/** The API server; every request is recorded as `METHOD name`, and goes to the controller namespace's Secrets. */
function fakeApi() {
  const api = createFakeKubernetesApi((request) => {
    assert.ok(request.path.startsWith(SECRETS), `only the controller namespace: ${request.path}`);
    return undefined;
  });
  const calls = (): string[] =>
    api.requests.map((r) => `${r.method} ${r.bare.slice(SECRETS.length + 1)}`.trim());
  return { client: api.client, secrets: objectsIn(api, SECRETS), calls };
}

function certOf(secret: JsonObject | undefined): X509Certificate {
  const data = (secret?.data ?? {}) as Record<string, string>;
  return new X509Certificate(Buffer.from(data['tls.crt'] ?? '', 'base64').toString('utf8'));
}

test("a fleet's Secret holds its own identity from the CA, owned by its ServiceAccount, and is written once", async () => {
  const { client, secrets, calls } = fakeApi();
  const fleetSecrets = createFleetClientSecrets({ client, ca: authority, log: discardingLogger });
  assert.equal(await fleetSecrets.ensure(INFRA, ACCOUNT), undefined);
  const secret = secrets.get(NAME);
  assert.ok(secret !== undefined);
  assert.equal(secret.type, 'kubernetes.io/tls');
  const metadata = secret.metadata as JsonObject;
  assert.deepEqual(metadata.ownerReferences, [
    { apiVersion: 'v1', kind: 'ServiceAccount', name: INFRA.name, uid: 'sa-uid-1' },
  ]);
  assert.equal(
    (metadata.labels as Record<string, string>)['app.kubernetes.io/managed-by'],
    'portico-gateway',
  );
  const cert = certOf(secret);
  assert.equal(fleetOfSubjectAltName(cert.subjectAltName), 'default/eg');
  assert.ok(cert.verify(new X509Certificate(ca.caCertPem).publicKey));
  const key = Buffer.from((secret.data as Record<string, string>)['tls.key']!, 'base64').toString('utf8');
  assert.ok(cert.checkPrivateKey(createPrivateKey(key)));
  assert.deepEqual(calls(), ['GET ' + NAME, 'POST']);

  await fleetSecrets.ensure(INFRA, ACCOUNT);
  assert.equal(calls().length, 2, 'a current Secret costs no request');
  // A restarted controller reads it once and keeps it.
  const restarted = createFleetClientSecrets({ client, ca: authority, log: discardingLogger });
  await restarted.ensure(INFRA, ACCOUNT);
  assert.deepEqual(calls().slice(2), ['GET ' + NAME]);
  assert.equal(certOf(secrets.get(NAME)).serialNumber, cert.serialNumber);
});

test('an identity from another CA, for another fleet, with another owner or near its end is issued again', async () => {
  const { client, secrets } = fakeApi();
  const controller = (now?: () => Date) =>
    createFleetClientSecrets({
      client,
      ca: authority,
      log: discardingLogger,
      ...(now === undefined ? {} : { now }),
    });
  const caKey = new X509Certificate(ca.caCertPem).publicKey;
  const other = generateCertificates();
  const otherCa = { caCertPem: other.caCertPem, caKeyPem: other.caKeyPem };
  await createFleetClientSecrets({ client, ca: otherCa, log: discardingLogger }).ensure(INFRA, ACCOUNT);
  assert.ok(!certOf(secrets.get(NAME)).verify(caKey));

  await controller().ensure(INFRA, ACCOUNT);
  assert.ok(certOf(secrets.get(NAME)).verify(caKey), 'from our CA now');
  await controller().ensure({ ...INFRA, fleet: 'default/other' }, ACCOUNT);
  assert.equal(fleetOfSubjectAltName(certOf(secrets.get(NAME)).subjectAltName), 'default/other');
  await controller().ensure(INFRA, ACCOUNT);
  assert.equal(
    fleetOfSubjectAltName(certOf(secrets.get(NAME)).subjectAltName),
    'default/eg',
    'its own again',
  );
  const recreated = { ...ACCOUNT, uid: 'sa-uid-2' };
  await controller().ensure(INFRA, recreated);
  const renamed = secrets.get(NAME);
  assert.ok(renamed !== undefined);
  const owners = (renamed.metadata as JsonObject).ownerReferences as { uid: string }[];
  assert.equal(owners[0]?.uid, 'sa-uid-2');
  // Five days on, the 7-day certificate is past two thirds of its life: renewed.
  const before = certOf(secrets.get(NAME)).serialNumber;
  await controller(() => new Date(Date.now() + 5 * 86_400_000)).ensure(INFRA, recreated);
  assert.notEqual(certOf(secrets.get(NAME)).serialNumber, before);
});

test('a same-name Secret Portico does not manage is reported and never touched; removal deletes only ours', async () => {
  const { client, secrets, calls } = fakeApi();
  const foreign = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: NAME, namespace: 'sys' },
    data: { x: 'eQ==' },
  };
  secrets.set(NAME, foreign);
  const fleetSecrets = createFleetClientSecrets({ client, ca: authority, log: discardingLogger });
  assert.match(
    (await fleetSecrets.ensure(INFRA, ACCOUNT)) ?? '',
    /Secret sys\/.*-client-cert already exists and is not managed by portico-gateway/,
  );
  await fleetSecrets.remove('sys', INFRA.name);
  assert.equal(secrets.get(NAME), foreign);
  assert.ok(!calls().some((c) => c.startsWith('PATCH') || c.startsWith('DELETE')), calls().join(', '));

  secrets.delete(NAME);
  await fleetSecrets.ensure(INFRA, ACCOUNT);
  await fleetSecrets.remove('sys', INFRA.name);
  assert.equal(secrets.has(NAME), false);
});

const DAY = 86_400_000;
const labelsOf = (secret: JsonObject | undefined) =>
  ((secret?.metadata as JsonObject | undefined)?.labels ?? {}) as Record<string, string>;
const annotationsOf = (secret: JsonObject | undefined) =>
  ((secret?.metadata as JsonObject | undefined)?.annotations ?? {}) as Record<string, string | null>;

test('certificates live 7 days; the renewal at two thirds records the one it replaced and its grace', async () => {
  const { client, secrets } = fakeApi();
  let now = Date.now();
  const fleetSecrets = createFleetClientSecrets({
    client,
    ca: authority,
    log: discardingLogger,
    now: () => new Date(now),
  });
  await fleetSecrets.ensure(INFRA, ACCOUNT);
  const first = certOf(secrets.get(NAME));
  const life = Date.parse(first.validTo) - now;
  assert.ok(Math.abs(life - 7 * DAY) < 2_000, `${life / DAY} days`);
  assert.deepEqual(annotationsOf(secrets.get(NAME)), {}, 'a new Secret records no predecessor');

  now += 4 * DAY;
  await fleetSecrets.ensure(INFRA, ACCOUNT);
  assert.equal(certOf(secrets.get(NAME)).serialNumber, first.serialNumber, 'not yet due');
  now += 0.75 * DAY;
  await fleetSecrets.ensure(INFRA, ACCOUNT);
  const second = certOf(secrets.get(NAME));
  assert.notEqual(second.serialNumber, first.serialNumber, 'due: renewed');
  const recorded = annotationsOf(secrets.get(NAME));
  assert.equal(recorded['gateway.portico.io/previous-client-certificate-sha256'], first.fingerprint256);
  assert.equal(
    Date.parse(recorded['gateway.portico.io/previous-client-certificate-until'] ?? ''),
    now + 5 * 60_000,
  );

  // Orphaned (its fleet recreated): replaced with no grace, and the earlier record is removed.
  await fleetSecrets.ensure(INFRA, { ...ACCOUNT, uid: 'sa-uid-9' });
  const orphanRecord = annotationsOf(secrets.get(NAME));
  assert.equal(orphanRecord['gateway.portico.io/previous-client-certificate-sha256'], undefined);
  assert.equal(orphanRecord['gateway.portico.io/previous-client-certificate-until'], undefined);
});

test('a timer asks for a pass when the earliest certificate is due; once renewed, not again soon', async () => {
  const { client, secrets } = fakeApi();
  const t0 = Date.now();
  const lifetime = { lifetimeMs: 3 * 3_600_000, graceMs: 60_000 };
  await createFleetClientSecrets({
    client,
    ca: authority,
    log: discardingLogger,
    now: () => new Date(t0),
    lifetime,
  }).ensure(INFRA, ACCOUNT);
  const first = certOf(secrets.get(NAME));
  // Issued an hour back (clock skew): due two thirds into its 4 hours, 1 h 40 min after issue.
  const dueAt =
    Date.parse(first.validFrom) + (Date.parse(first.validTo) - Date.parse(first.validFrom)) * (2 / 3);
  let clock = dueAt - 80;
  let due = 0;
  // A controller (re)started 80 ms before the renewal point: its first check arms the timer.
  const restarted = createFleetClientSecrets({
    client,
    ca: authority,
    log: discardingLogger,
    now: () => new Date(clock),
    lifetime,
    onRenewalDue: () => due++,
  });
  await restarted.ensure(INFRA, ACCOUNT);
  assert.equal(certOf(secrets.get(NAME)).serialNumber, first.serialNumber, 'not due yet');
  await new Promise((resolve) => setTimeout(resolve, 40));
  assert.equal(due, 0, 'not before its time');
  await waitUntil(() => due === 1);
  clock = dueAt;
  await restarted.ensure(INFRA, ACCOUNT);
  assert.notEqual(certOf(secrets.get(NAME)).serialNumber, first.serialNumber, 'the pass renews it');
  await new Promise((resolve) => setTimeout(resolve, 150));
  assert.equal(due, 1, 'the next renewal is hours away');
  restarted.reset();
});

async function waitUntil(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

test('a Secret deleted (or replaced) behind its back is noticed through the watch and issued again', async () => {
  const { client, secrets, calls } = fakeApi();
  const watched = new Map<string, string>();
  const fleetSecrets = createFleetClientSecrets({
    client,
    ca: authority,
    log: discardingLogger,
    observed: (namespace, name) => watched.get(`${namespace}/${name}`),
  });
  await fleetSecrets.ensure(INFRA, ACCOUNT);
  const first = certOf(secrets.get(NAME));
  watched.set(`sys/${NAME}`, first.fingerprint256);
  const asked = calls().length;
  await fleetSecrets.ensure(INFRA, ACCOUNT);
  assert.equal(calls().length, asked, 'the watch agrees: no request');

  // Revoked: an operator deletes the Secret. The watch sees it go; the next pass issues a new identity.
  secrets.delete(NAME);
  watched.delete(`sys/${NAME}`);
  await fleetSecrets.ensure(INFRA, ACCOUNT);
  const second = certOf(secrets.get(NAME));
  assert.notEqual(second.fingerprint256, first.fingerprint256);
  assert.deepEqual(annotationsOf(secrets.get(NAME)), {}, 'a revocation grants the old one no grace');
});

test('a certificate from an earlier version (730 days) is renewed on the first check, with the grace', async () => {
  const { client, secrets } = fakeApi();
  const earlier = createFleetClientSecrets({
    client,
    ca: authority,
    log: discardingLogger,
    lifetime: { lifetimeMs: 730 * DAY, graceMs: 60_000 },
  });
  await earlier.ensure(INFRA, ACCOUNT);
  const old = certOf(secrets.get(NAME));
  await createFleetClientSecrets({ client, ca: authority, log: discardingLogger }).ensure(INFRA, ACCOUNT);
  const renewed = certOf(secrets.get(NAME));
  assert.notEqual(renewed.fingerprint256, old.fingerprint256);
  assert.ok(Date.parse(renewed.validTo) - Date.now() <= 7 * DAY);
  assert.equal(
    annotationsOf(secrets.get(NAME))['gateway.portico.io/previous-client-certificate-sha256'],
    old.fingerprint256,
    'the proxies holding the old one keep connecting for the grace',
  );
});

test("the Secret carries its Gateway's spec.infrastructure labels and annotations; a change patches only them", async () => {
  const { client, secrets, calls } = fakeApi();
  const fleetSecrets = createFleetClientSecrets({ client, ca: authority, log: discardingLogger });
  const labelled = (labels: Record<string, string>, annotations: Record<string, string>): FleetInfra => ({
    ...INFRA,
    propagated: { labels: { 'gateway.networking.k8s.io/gateway-name': 'eg', ...labels }, annotations },
  });
  await fleetSecrets.ensure(labelled({ team: 'edge', tier: 'gold' }, { owner: 'a' }), ACCOUNT);
  const first = secrets.get(NAME);
  const metadata = first?.metadata as JsonObject;
  assert.deepEqual(metadata.labels, {
    'gateway.networking.k8s.io/gateway-name': 'eg',
    team: 'edge',
    tier: 'gold',
    ...INFRA.labels,
  });
  assert.deepEqual(metadata.annotations, { owner: 'a' });
  const serial = certOf(first).serialNumber;
  const writes = () => calls().filter((c) => !c.startsWith('GET')).length;
  const before = writes();
  await fleetSecrets.ensure(labelled({ team: 'edge', tier: 'gold' }, { owner: 'a' }), ACCOUNT);
  assert.equal(writes(), before, 'the same metadata: nothing written');

  // tier goes, owner changes: one patch of the metadata, the certificate stays.
  await fleetSecrets.ensure(labelled({ team: 'edge' }, { owner: 'b' }), ACCOUNT);
  assert.equal(writes(), before + 1);
  const second = secrets.get(NAME);
  assert.equal(certOf(second).serialNumber, serial, 'the same identity');
  assert.deepEqual(labelsOf(second), {
    'gateway.networking.k8s.io/gateway-name': 'eg',
    team: 'edge',
    ...INFRA.labels,
  });
  assert.deepEqual(annotationsOf(second), { owner: 'b' });

  // A renewal keeps them, beside its own record.
  const later = createFleetClientSecrets({
    client,
    ca: authority,
    log: discardingLogger,
    now: () => new Date(Date.now() + 5 * DAY),
  });
  await later.ensure(labelled({ team: 'edge' }, {}), ACCOUNT);
  const renewed = secrets.get(NAME);
  assert.notEqual(certOf(renewed).serialNumber, serial);
  assert.equal(labelsOf(renewed).team, 'edge');
  assert.deepEqual(Object.keys(annotationsOf(renewed)).sort(), [
    'gateway.portico.io/previous-client-certificate-sha256',
    'gateway.portico.io/previous-client-certificate-until',
  ]);
});

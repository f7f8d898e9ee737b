import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { test } from 'node:test';
import { createLogger } from '../../../src/platform/log-line.js';
import {
  CA_SECRET,
  ensureCertificateSecrets,
  SERVER_CERT_SECRET,
  waitForCertificateAuthority,
  waitForServerTls,
} from '../../../src/provider/kubernetes/certificate-secrets.js';
import { createFakeKubernetesApi, objectsIn } from '../../support/fake-kubernetes-api.js';

const SECRETS = '/api/v1/namespaces/sys/secrets';

/** The API server; certgen only reads, creates and deletes Secrets (any other request fails the test). */
function fakeSecrets() {
  const api = createFakeKubernetesApi((request) => {
    assert.ok(
      ['GET', 'POST', 'DELETE'].includes(request.method),
      `unexpected ${request.method} ${request.path}`,
    );
    return undefined;
  });
  return { client: api.client, secrets: objectsIn(api, SECRETS) };
}

function pem(secrets: ReturnType<typeof fakeSecrets>['secrets'], name: string, key: string): string {
  const data = secrets.get(name)?.data as Record<string, string>;
  return Buffer.from(data[key] ?? '', 'base64').toString('utf8');
}

test('certgen creates the CA and server Secrets (the CA last), no shared client identity, and then nothing', async () => {
  const { client, secrets } = fakeSecrets();
  assert.deepEqual(await ensureCertificateSecrets(client, 'sys'), [SERVER_CERT_SECRET, CA_SECRET]);
  assert.deepEqual(secrets.names().sort(), [CA_SECRET, SERVER_CERT_SECRET].sort());
  assert.deepEqual(await ensureCertificateSecrets(client, 'sys'), []);
});

test('leftovers of an interrupted run (no CA Secret) are replaced by certificates of the new CA', async () => {
  const { client, secrets } = fakeSecrets();
  await ensureCertificateSecrets(client, 'sys');
  const staleServer = pem(secrets, SERVER_CERT_SECRET, 'tls.crt');
  secrets.delete(CA_SECRET); // as if the run had died before writing the CA
  await ensureCertificateSecrets(client, 'sys');
  const ca = new X509Certificate(pem(secrets, CA_SECRET, 'ca.crt'));
  const server = new X509Certificate(pem(secrets, SERVER_CERT_SECRET, 'tls.crt'));
  assert.notEqual(server.toString(), new X509Certificate(staleServer).toString());
  assert.ok(server.verify(ca.publicKey), 'the server certificate is signed by the CA in the CA Secret');
});

test('rotate issues a new CA and server certificate; a server certificate of another CA is repaired', async () => {
  const { client, secrets } = fakeSecrets();
  await ensureCertificateSecrets(client, 'sys');
  const firstCa = pem(secrets, CA_SECRET, 'ca.crt');
  // An upgrade without rotate keeps what exists.
  assert.deepEqual(await ensureCertificateSecrets(client, 'sys', { rotate: false }), []);
  assert.equal(pem(secrets, CA_SECRET, 'ca.crt'), firstCa);
  assert.deepEqual(await ensureCertificateSecrets(client, 'sys', { rotate: true }), [
    SERVER_CERT_SECRET,
    CA_SECRET,
  ]);
  const ca = new X509Certificate(pem(secrets, CA_SECRET, 'ca.crt'));
  assert.notEqual(ca.toString(), new X509Certificate(firstCa).toString());
  assert.ok(new X509Certificate(pem(secrets, SERVER_CERT_SECRET, 'tls.crt')).verify(ca.publicKey));
  // A rotation cut short after the server Secret: the next run sees a server certificate of another CA.
  const rotatedServer = secrets.get(SERVER_CERT_SECRET)!;
  await ensureCertificateSecrets(client, 'sys', { rotate: true });
  secrets.set(SERVER_CERT_SECRET, rotatedServer);
  await ensureCertificateSecrets(client, 'sys');
  const repairedCa = new X509Certificate(pem(secrets, CA_SECRET, 'ca.crt'));
  assert.ok(new X509Certificate(pem(secrets, SERVER_CERT_SECRET, 'tls.crt')).verify(repairedCa.publicKey));
  assert.equal(pem(secrets, SERVER_CERT_SECRET, 'ca.crt'), pem(secrets, CA_SECRET, 'ca.crt'));
});

test('the controller waits for certgen: the server certificate and CA once their Secrets exist, saying so meanwhile', async () => {
  const { client, secrets } = fakeSecrets();
  const lines: string[] = [];
  const log = createLogger('debug', (line) => lines.push(line));
  const tls = waitForServerTls(client, 'sys', log, 5);
  const ca = waitForCertificateAuthority(client, 'sys', log, 5);
  for (let i = 0; i < 400 && lines.length < 4; i++) await new Promise((r) => setTimeout(r, 5));
  assert.ok(
    lines.some((l) => l.includes(`waiting for Secret sys/${SERVER_CERT_SECRET}`)),
    lines.join('\n'),
  );
  assert.ok(
    lines.some((l) => l.includes(`waiting for Secret sys/${CA_SECRET}`)),
    lines.join('\n'),
  );
  await ensureCertificateSecrets(client, 'sys');
  const [server, authority] = await Promise.all([tls, ca]);
  assert.equal(server.certPem, pem(secrets, SERVER_CERT_SECRET, 'tls.crt'));
  assert.equal(server.keyPem, pem(secrets, SERVER_CERT_SECRET, 'tls.key'));
  assert.equal(server.caPem, pem(secrets, CA_SECRET, 'ca.crt'));
  assert.equal(authority.caCertPem, pem(secrets, CA_SECRET, 'ca.crt'));
  assert.equal(authority.caKeyPem, pem(secrets, CA_SECRET, 'ca.key'));
});

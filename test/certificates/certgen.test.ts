import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { issueFleetCertificate, serverSans } from '../../src/certificates/certs.js';
import { startDiscoveryClient } from '../../src/discovery/client.js';
import { createDiscoveryServer } from '../../src/discovery/server.js';
import { sampleFleet, waitFor } from '../discovery/fixtures.js';
import { PORTICO_MAIN } from '../support/portico.js';

const dir = mkdtempSync(join(tmpdir(), 'portico-certgen-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const read = (file: string): string => readFileSync(join(dir, file), 'utf8');
const FLEET_CERT = 'fleets/proxy-default-certgen-6e555129.crt';
const FLEET_KEY = FLEET_CERT.replace(/\.crt$/, '.key');

function certgen(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(process.execPath, [PORTICO_MAIN, 'certgen', ...args], { encoding: 'utf8' });
}

const hasOpenssl = spawnSync('openssl', ['version']).status === 0;

test('certgen --local writes a CA and a server certificate, keys readable by the owner only; --fleet adds fleets', () => {
  const result = certgen('--local', dir, '--namespace', 'gw-system', '--extra-san', '192.0.2.7');
  assert.equal(result.status, 0, result.stderr);
  for (const file of ['ca.crt', 'server.crt']) assert.match(read(file), /^-----BEGIN CERTIFICATE-----/);
  for (const file of ['ca.key', 'server.key']) {
    assert.match(read(file), /^-----BEGIN PRIVATE KEY-----/);
    assert.equal(statSync(join(dir, file)).mode & 0o777, 0o600, `${file} mode`);
  }
  assert.ok(!result.stdout.includes('PRIVATE KEY'), 'keys are never printed');
  assert.ok(!existsSync(join(dir, 'client.crt')), 'no client identity shared by every fleet');

  const ca = new X509Certificate(read('ca.crt'));
  const server = new X509Certificate(read('server.crt'));
  assert.equal(ca.ca, true);
  assert.ok(server.verify(ca.publicKey), 'signed by the CA');
  assert.ok(server.checkIssued(ca));
  assert.equal(server.ca, false);
  const sans = server.subjectAltName ?? '';
  for (const name of serverSans('gw-system')) {
    assert.ok(
      sans.includes(name === '127.0.0.1' ? 'IP Address:127.0.0.1' : `DNS:${name}`),
      `SAN ${name} in ${sans}`,
    );
  }
  assert.ok(sans.includes('DNS:portico-gateway.gw-system.svc.cluster.local'));
  assert.ok(sans.includes('IP Address:192.0.2.7'));
  assert.ok(server.checkHost('portico-gateway.gw-system.svc'));
  assert.equal(server.checkIP('127.0.0.1'), '127.0.0.1');
  assert.match(server.keyUsage?.join(',') ?? '', /1\.3\.6\.1\.5\.5\.7\.3\.1/, 'server auth usage');

  // A fleet's certificate from the CA already there (which stays as it was).
  const fleet = certgen('--local', dir, '--fleet', 'default/certgen');
  assert.equal(fleet.status, 0, fleet.stderr);
  assert.equal(read('ca.crt'), ca.toString());
  const client = new X509Certificate(read(FLEET_CERT));
  assert.ok(client.verify(ca.publicKey));
  assert.equal(client.subjectAltName, 'URI:urn:portico:fleet:default%2Fcertgen');
  assert.match(client.keyUsage?.join(',') ?? '', /1\.3\.6\.1\.5\.5\.7\.3\.2/, 'client auth usage');
  assert.equal(statSync(join(dir, FLEET_KEY)).mode & 0o777, 0o600);
});

test('openssl verifies the generated chain for its purposes', {
  skip: !hasOpenssl && 'openssl not installed',
}, () => {
  const verify = (purpose: string, file: string) =>
    spawnSync('openssl', ['verify', '-purpose', purpose, '-CAfile', join(dir, 'ca.crt'), join(dir, file)], {
      encoding: 'utf8',
    });
  const server = verify('sslserver', 'server.crt');
  assert.equal(server.status, 0, server.stdout + server.stderr);
  assert.match(server.stdout, /server\.crt: OK/);
  const client = verify('sslclient', FLEET_CERT);
  assert.equal(client.status, 0, client.stdout + client.stderr);
  const wrong = verify('sslserver', FLEET_CERT);
  assert.notEqual(wrong.status, 0, 'the client certificate is not a server certificate');
});

test('certgen refuses to overwrite without --force and explains the options', () => {
  const again = certgen('--local', dir);
  assert.equal(again.status, 1);
  assert.match(again.stderr, /ca\.crt already exists \(use --force/);
  assert.equal(certgen('--local', dir, '--force').status, 0);
  const missing = certgen();
  assert.equal(missing.status, 2, 'a usage error');
  assert.match(missing.stderr, /--local DIR is required/);
  const help = certgen('--help');
  assert.equal(help.status, 0);
  assert.match(help.stdout, /--namespace NS/);
});

test('the generated certificates secure a discovery stream with mutual TLS', async (t) => {
  const server = createDiscoveryServer({
    address: '127.0.0.1:0',
    tls: { caPem: read('ca.crt'), certPem: read('server.crt'), keyPem: read('server.key') },
    auth: { mode: 'mtls' },
  });
  const { port } = await server.start();
  t.after(() => server.close());
  server.setFleet(sampleFleet('default/certgen'));
  // A fleet certificate from certgen (issued anew: --force replaced the CA above), and one issued later from
  // the same CA, both work for their fleet.
  assert.equal(certgen('--local', dir, '--fleet', 'default/certgen').status, 0);
  const extra = issueFleetCertificate(read('ca.crt'), read('ca.key'), 'default/certgen');
  for (const identity of [
    { certPem: read(FLEET_CERT), keyPem: read(FLEET_KEY), serverName: undefined },
    {
      certPem: extra.certPem,
      keyPem: extra.keyPem,
      serverName: 'portico-gateway.portico-gateway-system.svc',
    },
  ]) {
    let applied = 0;
    const client = startDiscoveryClient({
      address: `127.0.0.1:${port}`,
      fleet: 'default/certgen',
      node: `n-${identity.serverName ?? 'ip'}`,
      tls: {
        caPem: read('ca.crt'),
        certPem: identity.certPem,
        keyPem: identity.keyPem,
        ...(identity.serverName ? { serverName: identity.serverName } : {}),
      },
      apply: async () => {
        applied++;
        return { ok: true, listenerErrors: [] };
      },
    });
    await waitFor('the config over mTLS', () => applied === 1 && client.status().connected);
    await client.stop();
  }
});

// Standalone discovery authorizes per fleet: each proxy has its own client certificate in the state directory,
// and with it gets its own fleet's config and nothing of another fleet's (TLS keys included).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { issueFleetCertificate } from '../../../src/certificates/certs.js';
import { fleetInfraName } from '../../../src/ir/fleet-infra.js';
import { parseHostPort } from '../../../src/platform/host-port.js';
import { openRawStream } from '../../discovery/fixtures.js';
import { eventually, exampleCopy, programmedAddress, startStandalone } from './harness.js';

const SECOND_GATEWAY = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: other, namespace: default}
spec:
  gatewayClassName: portico
  listeners: [{name: http, protocol: HTTP, port: 8080}]
`;

test("a proxy's own certificate opens its own fleet and no other", async (t) => {
  const { files, stateDir } = await exampleCopy(t, 'quickstart', ['web']);
  await writeFile(join(files, 'other.yaml'), SECOND_GATEWAY);
  const c = await startStandalone(t, { args: ['-f', files], pool: '127.0.72.0/24', stateDir });
  await programmedAddress(c.admin, 'default', 'eg');
  await programmedAddress(c.admin, 'default', 'other');

  const certs = join(stateDir, 'certs');
  assert.ok(!existsSync(join(certs, 'client.crt')), 'no client identity shared by every proxy');
  const identity = async (fleet: string) => ({
    caPem: await readFile(join(certs, 'ca.crt'), 'utf8'),
    certPem: await readFile(join(certs, 'fleets', `${fleetInfraName(fleet)}.crt`), 'utf8'),
    keyPem: await readFile(join(certs, 'fleets', `${fleetInfraName(fleet)}.key`), 'utf8'),
  });
  const { port } = parseHostPort(c.discovery, 'discovery');
  const own = openRawStream({ port, tls: await identity('default/eg'), fleet: 'default/eg', node: 'probe' });
  const first = await own.next();
  assert.equal(first.full, true);
  own.close();

  const stolen = openRawStream({
    port,
    tls: await identity('default/eg'),
    fleet: 'default/other',
    node: 'probe',
  });
  const status = await stolen.closed;
  assert.equal(status.code, 7, `${status.code} ${status.details}`); // PERMISSION_DENIED
  assert.equal(stolen.messages.length, 0);
});

test('only the certificate in the state directory works for a fleet, and a removed fleet takes its certificate along', async (t) => {
  const { files, stateDir } = await exampleCopy(t, 'quickstart', ['web']);
  await writeFile(join(files, 'other.yaml'), SECOND_GATEWAY);
  const c = await startStandalone(t, { args: ['-f', files], pool: '127.0.73.0/24', stateDir });
  await programmedAddress(c.admin, 'default', 'other');
  const certs = join(stateDir, 'certs');
  const caPem = await readFile(join(certs, 'ca.crt'), 'utf8');
  const fleetFile = (ext: string) => join(certs, 'fleets', `${fleetInfraName('default/other')}.${ext}`);
  const held = {
    caPem,
    certPem: await readFile(fleetFile('crt'), 'utf8'),
    keyPem: await readFile(fleetFile('key'), 'utf8'),
  };
  const { port } = parseHostPort(c.discovery, 'discovery');

  // Signed by the same CA and naming the fleet, but not the certificate its files hold: refused.
  const minted = issueFleetCertificate(caPem, await readFile(join(certs, 'ca.key'), 'utf8'), 'default/other');
  const forged = openRawStream({ port, tls: { caPem, ...minted }, fleet: 'default/other', node: 'probe' });
  const refused = await forged.closed;
  assert.equal(refused.code, 16, `${refused.code} ${refused.details}`); // UNAUTHENTICATED
  assert.equal(forged.messages.length, 0);

  // The fleet's own works, until the fleet goes: then its stream is closed and its files are deleted.
  const own = openRawStream({ port, tls: held, fleet: 'default/other', node: 'probe' });
  assert.equal((await own.next()).full, true);
  await rm(join(files, 'other.yaml'));
  const closed = await own.closed;
  assert.equal(closed.code, 16, `${closed.code} ${closed.details}`);
  await eventually('the fleet certificate files to go', async () =>
    existsSync(fleetFile('crt')) ? undefined : true,
  );
  const after = openRawStream({ port, tls: held, fleet: 'default/other', node: 'probe' });
  assert.equal((await after.closed).code, 16);
  assert.equal(after.messages.length, 0);
});

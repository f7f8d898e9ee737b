// Standalone discovery authorizes per fleet: each proxy has its own client certificate in the state directory,
// and with it gets its own fleet's config and nothing of another fleet's (TLS keys included).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { fleetInfraName } from '../../../src/ir/fleet-infra.js';
import { parseHostPort } from '../../../src/platform/host-port.js';
import { openRawStream } from '../../discovery/fixtures.js';
import { exampleCopy, programmedAddress, startStandalone } from './harness.js';

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

// A Gateway named with 253 characters (the longest name Kubernetes allows, Gateway API v1.7's
// GatewayNameMaximumLength), tried as a new user would: the quickstart with its Gateway renamed. It becomes
// Programmed and its address answers; a second such Gateway, differing in the last character only, gets its own
// proxy, address and state files.
import assert from 'node:assert/strict';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { echoBody, exampleCopy, programmedAddress, startStandalone, untilStatus } from './harness.js';

const LONG = `gateway-name-maximum-length-${'a'.repeat(225)}`;
const TWIN = `${LONG.slice(0, -1)}b`;

test('a 253-character Gateway name is Programmed and served; its twin gets its own proxy', async (t) => {
  assert.equal(LONG.length, 253);
  const { files, stateDir } = await exampleCopy(t, 'quickstart', ['web', 'api']);
  const gatewayFile = join(files, 'gateway.yaml');
  const original = await readFile(gatewayFile, 'utf8');
  // The quickstart's Gateway `eg` and the route's parentRef, renamed; and the same again as the twin.
  const renamed = (name: string) =>
    original.replace(/^ {2}name: eg$/m, `  name: ${name}`).replace(/- name: eg$/m, `- name: ${name}`);
  assert.notEqual(renamed(LONG), original);
  const twin = renamed(TWIN)
    .split(/^---$/m)
    .filter((doc) => !doc.includes('kind: GatewayClass'))
    .join('---')
    .replace('name: www', 'name: www-twin');
  await writeFile(gatewayFile, renamed(LONG));
  await writeFile(join(files, 'twin.yaml'), twin);

  const c = await startStandalone(t, { args: ['-f', files], pool: '127.0.98.0/24', stateDir });
  const address = await programmedAddress(c.admin, 'default', LONG);
  const twinAddress = await programmedAddress(c.admin, 'default', TWIN);
  assert.notEqual(address, twinAddress);
  for (const at of [address, twinAddress]) {
    const reply = await untilStatus(at, 8080, 'www.example.com', '/api/users', 200);
    assert.equal(echoBody(reply).pod, 'api');
  }
  // One proxy record per fleet, each name within a file name's and a label's limits.
  const proxies = await readdir(join(stateDir, 'proxies'));
  assert.equal(proxies.length, 2, proxies.join(', '));
  for (const file of proxies) assert.ok(file.length <= 63 + '.json'.length, file);
});

// `portico describe` and `portico get -w` against a real standalone controller with its proxy running: the
// quickstart plus a route to a Service that does not exist and a route whose Gateway does not exist.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';
import { startPortico, waitForOutputWithin } from '../../support/child.js';
import { PORTICO_MAIN } from '../../support/portico.js';
import { defer, exampleCopy, programmedAddress, startStandalone } from './harness.js';

const PROBLEM_ROUTES = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: gone-backend, namespace: default}
spec:
  parentRefs: [{name: eg}]
  hostnames: [gone.example.com]
  rules:
    - matches: [{path: {type: PathPrefix, value: /x}}]
      backendRefs: [{name: backend-gone, port: 3001}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: orphan, namespace: default}
spec:
  parentRefs: [{name: nope}]
  rules: [{backendRefs: [{name: backend-api, port: 3001}]}]
`;

/** Runs the CLI to its end without blocking this process. */
function portico(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [PORTICO_MAIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => {
    stdout += s;
  });
  child.stderr.setEncoding('utf8').on('data', (s: string) => {
    stderr += s;
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

test('describe explains a Gateway, a broken route and a route attached nowhere; get -w prints changes', async (t) => {
  const { files, stateDir } = await exampleCopy(t, 'quickstart', ['backend-api', 'backend-web']);
  await writeFile(join(files, 'problems.yaml'), PROBLEM_ROUTES);
  const c = await startStandalone(t, { args: ['-f', files], pool: '127.0.74.0/24', stateDir });
  const address = await programmedAddress(c.admin, 'default', 'eg');

  const gateway = await portico('describe', 'gateway', 'eg', '--admin-address', c.admin);
  assert.equal(gateway.code, 0, gateway.stderr);
  assert.match(gateway.stdout, new RegExp(`^Addresses: +${address.replaceAll('.', '\\.')}$`, 'm'));
  assert.match(gateway.stdout, /^ {2}Programmed +True +Programmed/m);
  assert.match(gateway.stdout, /^ {2}HTTPRoute +default +gone-backend +\* +True +False$/m);
  assert.match(gateway.stdout, /^ {2}HTTPRoute +default +www +\* +True +True$/m);
  assert.doesNotMatch(gateway.stdout, /orphan/);
  assert.match(gateway.stdout, /^Fleet: {2}default\/eg\n/m);
  assert.match(gateway.stdout, /Process: +pid \d+, running, 0 restarts/);
  assert.match(gateway.stdout, new RegExp(`^ {4}default/eg@${address.replaceAll('.', '\\.')} +\\d+`, 'm'));

  const broken = await portico('describe', 'httproute', 'gone-backend', '--admin-address', c.admin);
  assert.match(
    broken.stdout,
    /^Problems:\n {2}parent Gateway default\/eg: ResolvedRefs=False \(BackendNotFound\): .*Service default\/backend-gone not found$/m,
  );
  assert.match(broken.stdout, /^ {2}\d+s +parent Gateway default\/eg +ResolvedRefs=False +BackendNotFound/m);

  const orphan = await portico('describe', 'httproute', 'orphan', '--admin-address', c.admin);
  assert.match(orphan.stdout, /^Status: +attached to no Gateway: no Gateway of this controller reports it/m);
  assert.match(
    orphan.stdout,
    /^ {2}Gateway default\/nope: no status: Gateway default\/nope does not exist$/m,
  );
  const listed = await portico('get', 'httproutes', '--admin-address', c.admin);
  assert.match(listed.stdout, /^orphan +\[\] +<none> +<none>/m);

  // get config: the fleet's config as discovery serves it, and one proxy's own dump; the same routes.
  const served = await portico('get', 'config', 'default/eg', '--admin-address', c.admin);
  assert.equal(served.code, 0, served.stderr);
  const servedConfig = parse(served.stdout) as { fleet: string; virtualHosts: { domains?: string[] }[] };
  assert.equal(servedConfig.fleet, 'default/eg');
  assert.match(served.stdout, /www\.example\.com/);
  const applied = await portico('get', 'config', '-o', 'json', '--proxy-admin', `${address}:19000`);
  assert.equal(applied.code, 0, applied.stderr);
  assert.deepEqual(
    (JSON.parse(applied.stdout) as { virtualHosts: unknown }).virtualHosts,
    servedConfig.virtualHosts,
  );
  const missing = await portico('get', 'config', 'default/nope', '--admin-address', c.admin);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /fleet "default\/nope" not found/);

  // get -w: the table, then a row each time a route changes.
  const watcher = startPortico(['get', 'httproutes', '-w', '--admin-address', c.admin]);
  defer(t, () => {
    watcher.process.kill('SIGKILL');
  });
  await waitForOutputWithin(watcher, /^www +\["www\.example\.com"\]/m);
  const file = join(files, 'problems.yaml');
  await writeFile(file, (await readFile(file, 'utf8')).replace('gone.example.com', 'renamed.example.com'));
  await waitForOutputWithin(watcher, /^gone-backend +\["renamed\.example\.com"\] +True +False/m);
  assert.equal(watcher.stdout().match(/^NAME /gm)?.length, 1, 'the header is printed once');
  assert.doesNotMatch(
    watcher.stdout().split('renamed')[1] ?? '',
    /^www /m,
    'an unchanged route is not printed again',
  );
  watcher.process.kill('SIGINT');
  assert.equal(await watcher.exited, 0);
});

// examples/external-auth run as examples/README.md tells a user: the real `portico standalone`, the example's two
// authorization services started from their scripts, and curl through the proxy.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { freePort } from '../../support/http.js';
import { REPO_ROOT } from '../../support/portico.js';
import { eventually, exampleCopy, programmedAddress, startStandalone } from './harness.js';

const run = promisify(execFile);

/** Starts one of the example's scripts on `port`, as the README does; stopped when the test ends. */
async function startScript(t: { after(fn: () => void): void }, script: string, port: number): Promise<void> {
  const child = spawn(process.execPath, [join(REPO_ROOT, 'examples/external-auth', script), String(port)], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.after(() => child.kill('SIGTERM'));
  const [line] = (await once(child.stdout, 'data')) as [Buffer];
  assert.match(line.toString(), /service on 127\.0\.0\.1:/);
}

test('external-auth example: forward-auth and ext_authz services decide through the proxy, seen with curl', async (t) => {
  const { files, stateDir } = await exampleCopy(t, 'external-auth', ['web']);
  const httpPort = await freePort();
  const grpcPort = await freePort();
  await startScript(t, 'auth-server.mjs', httpPort);
  await startScript(t, 'ext-authz-server.mjs', grpcPort);
  const file = join(files, 'resources.yaml');
  const text = await readFile(file, 'utf8');
  await writeFile(
    file,
    text.replace('port: 3011', `port: ${httpPort}`).replace('port: 3012', `port: ${grpcPort}`),
  );
  const c = await startStandalone(t, { args: ['-f', files], pool: '127.0.92.0/24', stateDir });
  const address = await programmedAddress(c.admin, 'default', 'eg');
  const curl = async (args: string): Promise<string> =>
    (await run('sh', ['-c', `curl -sS -i -H 'Host: app.example.com' ${args}`], { encoding: 'utf8' })).stdout;

  const allowed = await eventually('a request the forward-auth service lets pass', async () => {
    const out = await curl(`-H 'Authorization: Bearer letmein' http://${address}:8080/`).catch(() => '');
    return /^HTTP\/1\.1 200/.test(out) ? out : undefined;
  });
  assert.match(allowed, /"X-Auth-User":\["alice"\]/);
  const refused = await curl(`http://${address}:8080/`);
  assert.match(refused, /^HTTP\/1\.1 401/);
  assert.match(refused, /^www-authenticate: Bearer realm="example"\r$/m);
  assert.match(refused, /who are you\?/);

  const granted = await curl(`-H 'Authorization: Bearer letmein' http://${address}:8080/api/orders`);
  assert.match(granted, /^HTTP\/1\.1 200/);
  assert.match(granted, /"X-Authz":\["granted"\]/);
  assert.doesNotMatch(granted, /"Authorization"/);
  const denied = await curl(`http://${address}:8080/api/orders`);
  assert.match(denied, /^HTTP\/1\.1 403/);
  assert.match(denied, /denied/);
});

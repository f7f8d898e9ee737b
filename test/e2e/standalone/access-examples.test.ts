// The AccessPolicy examples in examples/, run as docs/access-policy.md tells a user: the real `portico
// standalone`, the example's own script, and curl.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { exampleCopy, programmedAddress, startStandalone, untilStatus } from './harness.js';

const run = promisify(execFile);

/** curl's status code for a request to www.example.com at `address`, with extra curl arguments. */
async function curl(address: string, path: string, ...args: string[]): Promise<string> {
  const { stdout } = await run('curl', [
    '-s',
    '-o',
    '/dev/null',
    '-w',
    '%{http_code}',
    '-H',
    'Host: www.example.com',
    ...args,
    `http://${address}:8080${path}`,
  ]);
  return stdout;
}

test('access-jwt: make-jwt.mjs writes the key Secret and a token; curl with it passes, without it gets 401', async (t) => {
  const { files, stateDir } = await exampleCopy(t, 'access-jwt', ['web', 'api']);
  const script = join(process.cwd(), 'examples/access-jwt/make-jwt.mjs');
  const token = (await run(process.execPath, [script, files])).stdout.trim();
  const c = await startStandalone(t, { args: ['-f', files], pool: '127.0.49.0/24', stateDir });
  const address = await programmedAddress(c.admin, 'default', 'eg');
  await untilStatus(address, 8080, 'www.example.com', '/', 401);
  assert.equal(await curl(address, '/', '-H', `Authorization: Bearer ${token}`), '200');
  assert.equal(await curl(address, '/', '-X', 'POST', '-H', `Authorization: Bearer ${token}`), '200');
  assert.equal(await curl(address, '/', '-X', 'DELETE', '-H', `Authorization: Bearer ${token}`), '403');
  assert.equal(await curl(address, '/'), '401');
});

test('access-credentials: basic auth on /api, an API key elsewhere', async (t) => {
  const { files, stateDir } = await exampleCopy(t, 'access-credentials', ['web', 'api']);
  const c = await startStandalone(t, { args: ['-f', files], pool: '127.0.50.0/24', stateDir });
  const address = await programmedAddress(c.admin, 'default', 'eg');
  await untilStatus(address, 8080, 'www.example.com', '/', 401);
  assert.equal(await curl(address, '/', '-H', 'x-api-key: demo-key-0123456789'), '200');
  assert.equal(await curl(address, '/', '-H', 'x-api-key: wrong'), '401');
  assert.equal(await curl(address, '/api', '-u', 'demo:demo-password'), '200');
  assert.equal(await curl(address, '/api', '-u', 'demo:wrong'), '401');
});

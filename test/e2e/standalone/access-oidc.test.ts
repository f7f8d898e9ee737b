// OIDC login through the real proxy from YAML, as examples/access-oidc tells a user: the example's own provider
// script (the certified `oidc-provider` on loopback) writes the Secret and serves the login pages; a browser (a
// cookie jar following redirects) is sent to log in, comes back through the callback with a session, reaches the
// backend with its tokens, and logs out. Calls that are not page loads get 401; the config dump never shows the
// client or cookie secret.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { Browser } from '../../support/browser.js';
import { type EchoBody, freePort } from '../../support/http.js';
import { adminGet, defer, eventually, exampleCopy, programmedAddress, startStandalone } from './harness.js';

/** The example's provider script on `port`, for the fleet at `address`; resolves once it serves. */
async function startProvider(files: string, address: string, port: number) {
  const script = join(process.cwd(), 'examples/access-oidc/provider.mjs');
  const child = spawn(process.execPath, [script, files, address, String(port)], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let said = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => {
    said += chunk;
  });
  await eventually('the OpenID provider to serve', async () => {
    if (child.exitCode !== null) throw new Error(`provider.mjs exited ${child.exitCode}: ${said}`);
    return said.includes('OpenID provider on') ? true : undefined;
  });
  return child;
}

test('OIDC: a browser logs in at the provider, reaches the backend with its tokens, and logs out', async (t) => {
  const { files, stateDir } = await exampleCopy(t, 'access-oidc', ['web']);
  const c = await startStandalone(t, { args: ['-f', files], pool: '127.0.53.0/24', stateDir });
  const address = await programmedAddress(c.admin, 'default', 'eg');
  const base = `http://${address}:8080`;
  // The example names the provider on port 9090 and the quickstart's address: here, a free port and this fleet's.
  const port = await freePort();
  const accessFile = join(files, 'access.yaml');
  const access = (await readFile(accessFile, 'utf8'))
    .replaceAll('http://127.0.0.1:9090', `http://127.0.0.1:${port}`)
    .replaceAll('http://127.0.1.1:8080/', `${base}/`);
  await writeFile(accessFile, access);
  const provider = await startProvider(files, address, port);
  defer(t, async () => {
    provider.kill('SIGTERM');
    if (provider.exitCode === null) await once(provider, 'exit');
  });
  const secrets = await readFile(join(files, 'oidc-secret.yaml'), 'utf8');
  const clientSecret = /client-secret: (\S+)/.exec(secrets)![1]!;
  const cookieSecret = /cookie-secret: (\S+)/.exec(secrets)![1]!;

  // Until the controller has read the new files, the policy waits for its Secret and refuses (fail closed).
  const browser = new Browser();
  const loginPage = await eventually('the login redirect', async () => {
    const page = await browser.go(`${base}/dashboard?tab=1`);
    return page.url.startsWith(`http://127.0.0.1:${port}/interaction/`) ? page : undefined;
  });
  const consentPage = await browser.submit(loginPage, { login: 'alice', password: 'any' });
  const landed = await browser.submit(consentPage);
  assert.equal(landed.status, 200, landed.body.slice(0, 300));
  assert.equal(landed.url, `${base}/dashboard?tab=1`);
  const seen = JSON.parse(landed.body) as EchoBody;
  assert.equal(seen.path, '/dashboard?tab=1');
  assert.match(seen.headers.Authorization?.[0] ?? '', /^Bearer \S+$/);
  assert.equal(seen.headers['X-Id-Token']?.[0]?.split('.').length, 3, 'the ID token, a JWT');
  assert.ok(browser.cookies(base).has('portico-session'));
  assert.equal(seen.headers.Cookie, undefined, 'the session cookie does not reach the backend');
  browser.cookies(base).set('theme', 'dark');
  const prefs = JSON.parse((await browser.request(`${base}/prefs`)).body) as EchoBody;
  assert.deepEqual(prefs.headers.Cookie, ['theme=dark'], "the site's other cookies do");

  // A call that is not a page load gets 401 rather than a login page; with the session it passes.
  const api = await new Browser().request(`${base}/api/orders`, { method: 'POST', body: '{}' });
  assert.equal(api.status, 401);
  const withSession = await browser.request(`${base}/api/orders`, { method: 'POST', body: '{}' });
  assert.equal(withSession.status, 200);

  // The admin API's config dump shows neither secret.
  const dump = JSON.stringify(await adminGet<unknown>(c.admin, '/api/fleets'));
  assert.ok(dump.includes('portico-example'), 'the dump holds the policy');
  assert.ok(!dump.includes(clientSecret) && !dump.includes(cookieSecret), 'no secret in the dump');

  const logout = await browser.request(`${base}/logout`);
  assert.equal(logout.status, 302);
  assert.equal(new URL(logout.headers.get('location') ?? '').origin, `http://127.0.0.1:${port}`);
  assert.ok(!browser.cookies(base).has('portico-session'), 'the session cookie is cleared');
  const after = await browser.request(`${base}/dashboard`);
  assert.equal(after.status, 302, 'without a session: sent to log in again');
});

// The OpenID provider test image (toolchain/openid-provider-image.ts), as `npm run toolchain` builds it (the
// manifest is not written here): two layers, the Portico runtime's and the provider's; the
// provider's layer unpacked runs on the image's Node with nothing but its own node_modules, and serves its
// discovery document under the issuer it was given. Without ISSUER it exits naming it.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { nodeRuntime } from '../../toolchain/node-runtime.js';
import { blobFile, type Descriptor } from '../../toolchain/oci.js';
import { buildOpenIdProviderImage } from '../../toolchain/openid-provider-image.js';
import { eventually } from '../cluster/kube-api.js';
import { freePort } from '../support/http.js';

test('the OpenID provider image: its layer serves discovery on the image’s Node from its own node_modules', async (t) => {
  const work = mkdtempSync(join(tmpdir(), 'portico-openid-image-'));
  t.after(() => rmSync(work, { recursive: true, force: true }));
  // The toolchain's own cache: `npm run toolchain` has built this image there (found, not rebuilt), and the
  // Portico image test's folder is left to that test, which may build the same runtime layer at the same time.
  const image = await buildOpenIdProviderImage();
  assert.match(image.name, /^portico\.test\/openid-provider:\d+\.\d+\.\d+$/);
  const layout = join(image.archive, '..', 'layout');
  const index = JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8')) as { manifests: Descriptor[] };
  const manifest = JSON.parse(readFileSync(blobFile(layout, index.manifests[0]!.digest), 'utf8')) as {
    layers: Descriptor[];
  };
  assert.equal(manifest.layers.length, 2, 'the runtime layer and the provider layer');
  const root = join(work, 'root');
  mkdirSync(root);
  const untar = spawnSync('tar', ['-xzf', blobFile(layout, manifest.layers[1]!.digest), '-C', root]);
  assert.equal(untar.status, 0, String(untar.stderr));

  const node = nodeRuntime();
  const script = join(root, 'app/provider.mjs');
  const missing = spawnSync(node, [script], { encoding: 'utf8', env: { PATH: process.env.PATH } });
  assert.notEqual(missing.status, 0);
  assert.match(missing.stderr, /ISSUER is not set/);

  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const env = {
    PATH: process.env.PATH,
    ISSUER: issuer,
    PORT: String(port),
    CLIENT_ID: 'c',
    CLIENT_SECRET: 's',
    REDIRECT_URI: 'http://127.0.0.1/cb',
  };
  const provider = spawn(node, [script], { env, stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => provider.once('exit', () => resolve()));
  t.after(async () => {
    provider.kill('SIGTERM');
    await exited;
  });
  const discovery = await eventually(async () => {
    const answer = await fetch(`${issuer}/.well-known/openid-configuration`);
    return answer.ok
      ? ((await answer.json()) as { issuer: string; authorization_endpoint: string })
      : undefined;
  }, 'the provider’s discovery document');
  assert.equal(discovery.issuer, issuer);
  assert.equal(discovery.authorization_endpoint, `${issuer}/auth`);
});

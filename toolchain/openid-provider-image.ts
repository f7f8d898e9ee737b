// An OpenID provider image for the Kubernetes tests' OIDC login: pods cannot reach the host, so the provider runs
// in the cluster. No registry and no Docker: the Portico image's runtime layer (Debian's C/C++ runtime, tini and
// the image's Node) and one layer of toolchain/openid-provider/provider.mjs with the `oidc-provider` and `jose`
// packages (and what they depend on) copied from the repository's node_modules. Nothing here ships; the image is
// only imported into the test cluster's containerd.
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from './manifest.js';
import { OciImageError } from './oci.js';
import { fileHash, hash, IMAGE_USER, runtimeLayer } from './portico-image.js';
import { cachedTestImage, type TestImage } from './test-image.js';

/** Bumped when the recipe changes in a way its inputs do not show. */
const RECIPE_VERSION = '1';
const SCRIPT = join(REPO, 'toolchain/openid-provider/provider.mjs');
const PACKAGES = ['oidc-provider', 'jose'];

interface PackageJson {
  name: string;
  version: string;
  dependencies?: Record<string, string>;
}

/** The folder Node resolves `name` to from the package at `from` (REPO-relative): its own node_modules, then up. */
function resolvePackage(name: string, from: string): string {
  const segments = from.split('/');
  const ancestors = segments.flatMap((s, i) =>
    s === 'node_modules' ? [segments.slice(0, i).join('/')] : [],
  );
  for (const base of [from, ...ancestors.reverse()]) {
    const candidate = join(base === '' ? '.' : base, 'node_modules', name);
    if (existsSync(join(REPO, candidate, 'package.json'))) return candidate;
  }
  throw new OciImageError(`${name} (needed by ${from}) is not in node_modules`);
}

/** The package folders (relative to REPO) that `roots` need at run time: they and their dependencies. */
export function packageClosure(roots: string[]): string[] {
  const found = new Set<string>();
  const visit = (name: string, from: string) => {
    const dir = resolvePackage(name, from);
    if (found.has(dir)) return;
    found.add(dir);
    const pkg = JSON.parse(readFileSync(join(REPO, dir, 'package.json'), 'utf8')) as PackageJson;
    for (const dependency of Object.keys(pkg.dependencies ?? {})) visit(dependency, dir);
  };
  for (const root of roots) visit(root, '.');
  return [...found].sort();
}

/** Builds the OpenID provider test image (or finds it in the cache). */
export async function buildOpenIdProviderImage(): Promise<TestImage> {
  const packages = packageClosure(PACKAGES);
  const versions = packages.map((dir) => {
    const pkg = JSON.parse(readFileSync(join(REPO, dir, 'package.json'), 'utf8')) as PackageJson;
    return `${dir}@${pkg.version}`;
  });
  const provider = versions.find((v) => v.startsWith('node_modules/oidc-provider@'))?.split('@')[1];
  const name = `portico.test/openid-provider:${provider}`;
  const runtime = await runtimeLayer();
  return cachedTestImage({
    kind: 'openid-provider',
    key: hash(RECIPE_VERSION, name, runtime.descriptor.digest, fileHash(SCRIPT), ...versions),
    name,
    base: [runtime],
    config: {
      entrypoint: ['/usr/bin/tini', '--', '/usr/local/bin/node', '/app/provider.mjs'],
      env: ['NODE_ENV=production'],
      user: IMAGE_USER,
      workingDir: '/app',
    },
    fill(root) {
      const app = join(root, 'app');
      mkdirSync(app, { recursive: true });
      for (const pkg of packages) cpSync(join(REPO, pkg), join(app, pkg), { recursive: true });
      cpSync(SCRIPT, join(app, 'provider.mjs'));
      // ESM: `import 'oidc-provider'` resolves from /app/node_modules.
      writeFileSync(join(app, 'package.json'), '{"type":"module","private":true}\n');
    },
  });
}

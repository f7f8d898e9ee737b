// `npm run image`: the image the chart installs, built with Node, npm, GNU tar and Debian's apt-get only —
// no Go, no Docker engine, no Kubernetes toolchain. It prints where the OCI archive is and how to push it.
// When a test toolchain exists (~/.cache/portico/toolchain.json), its manifest is pointed at the new image,
// so the next test cluster imports it.
//
//   npm run image [-- --out FILE] [--rootfs DIR]
//
// --rootfs DIR also unpacks the image's layers into DIR (what the Dockerfile's final stage copies).
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { type Manifest, manifestPath } from './manifest.js';
import { blobFile, type Descriptor, OciImageError } from './oci.js';
import { buildPorticoImage, PorticoImageError } from './portico-image.js';

const USAGE = 'usage: npm run image [-- --out FILE] [--rootfs DIR]';

function pointToolchainAt(archive: string, name: string, summary: string): boolean {
  const path = manifestPath();
  if (!existsSync(path)) return false;
  const manifest = JSON.parse(readFileSync(path, 'utf8')) as Manifest;
  manifest.images.portico = { archive, names: [name], summary };
  writeFileSync(`${path}.tmp`, `${JSON.stringify(manifest, null, 2)}\n`);
  renameSync(`${path}.tmp`, path);
  return true;
}

/** Unpacks the image's layers, in order, into `dir` (owners kept when run as root). */
function unpackLayers(layout: string, dir: string): void {
  const index = JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8')) as { manifests: Descriptor[] };
  const first = index.manifests[0];
  if (first === undefined) throw new OciImageError(`${layout} holds no image`);
  const manifest = JSON.parse(readFileSync(blobFile(layout, first.digest), 'utf8')) as {
    layers: Descriptor[];
  };
  mkdirSync(dir, { recursive: true });
  for (const layer of manifest.layers) {
    const result = spawnSync('tar', ['-xzf', blobFile(layout, layer.digest), '-C', dir, '--numeric-owner'], {
      encoding: 'utf8',
    });
    if (result.status !== 0) throw new OciImageError(`unpacking ${layer.digest}: ${result.stderr}`);
  }
}

async function main(): Promise<void> {
  let out: string | undefined;
  let rootfs: string | undefined;
  try {
    const { values } = parseArgs({ options: { out: { type: 'string' }, rootfs: { type: 'string' } } });
    out = values.out;
    rootfs = values.rootfs;
  } catch (error) {
    process.stderr.write(`image: ${(error as Error).message}\n${USAGE}\n`);
    process.exit(2);
  }
  const started = Date.now();
  const image = await buildPorticoImage();
  let archive = image.archive;
  if (out !== undefined) {
    archive = resolve(out);
    copyFileSync(image.archive, archive);
  }
  if (rootfs !== undefined) unpackLayers(image.layout, resolve(rootfs));
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  const toolchain = pointToolchainAt(image.archive, image.name, image.summary);
  process.stdout.write(
    [
      `${image.built ? 'built' : 'up to date'} in ${seconds} s: ${image.summary}`,
      `OCI archive: ${archive}`,
      ...(toolchain ? ['the test toolchain now imports this image into the clusters it starts'] : []),
      'to push it (one of):',
      `  skopeo copy oci-archive:${archive} docker://REGISTRY/portico:TAG`,
      `  crane push ${image.layout} REGISTRY/portico:TAG`,
      `  podman load -i ${archive} && podman push ${image.name} REGISTRY/portico:TAG`,
      `  docker load -i ${archive}   # Docker 25 or newer reads OCI archives`,
      `then: helm install ... --set image.repository=REGISTRY/portico --set image.tag=TAG`,
      '',
    ].join('\n'),
  );
}

try {
  await main();
} catch (error) {
  if (error instanceof PorticoImageError || error instanceof OciImageError) {
    process.stderr.write(`image: ${error.message}\n`);
    process.exit(1);
  }
  throw error;
}

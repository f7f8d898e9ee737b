// An OCI image assembler in TypeScript: layer tarballs in, an OCI image layout and an archive out, with no
// Docker engine and no Go. `npm run image` uses it, so the image the chart installs can be built on any
// machine with Node, npm, GNU tar and Debian's apt-get; the toolchain uses it for the same image, so there is
// one recipe. The layout follows the OCI image-spec 1.1 (oci-layout, index.json, blobs/sha256); the archive is
// that layout as a tar file, which `ctr images import` and `skopeo copy oci-archive:` read.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  createReadStream,
  createWriteStream,
  mkdirSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';

export const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
export const OCI_CONFIG = 'application/vnd.oci.image.config.v1+json';
export const OCI_LAYER_GZIP = 'application/vnd.oci.image.layer.v1.tar+gzip';

export class OciImageError extends Error {
  readonly code = 'OCI_IMAGE';
}

export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
}

/** A compressed layer blob, and the digest of its uncompressed tar (the config's diff_id). */
export interface LayerBlob {
  descriptor: Descriptor;
  diffId: string;
  /** The gzip file the descriptor describes. */
  path: string;
}

export interface ImageConfigOptions {
  entrypoint?: string[];
  cmd?: string[];
  env?: string[];
  user?: string;
  workingDir?: string;
}

/** Passes bytes through while hashing them and counting them. */
class Digesting extends Transform {
  private readonly hash = createHash('sha256');
  size = 0;
  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    this.hash.update(chunk);
    this.size += chunk.length;
    this.push(chunk);
    done();
  }
  digest(): string {
    return `sha256:${this.hash.digest('hex')}`;
  }
}

/**
 * Gzips a layer tarball into `outFile` (level 1: the image's Node binary dominates, and compresses about as
 * well at 1 as at 9). Node's gzip header carries no time or name, so the same tar gives the same blob.
 */
export async function compressLayer(tarFile: string, outFile: string): Promise<LayerBlob> {
  const uncompressed = new Digesting();
  const compressed = new Digesting();
  await pipeline(
    createReadStream(tarFile),
    uncompressed,
    createGzip({ level: 1 }),
    compressed,
    createWriteStream(outFile),
  );
  return {
    descriptor: { mediaType: OCI_LAYER_GZIP, digest: compressed.digest(), size: compressed.size },
    diffId: uncompressed.digest(),
    path: outFile,
  };
}

function sha256(bytes: Buffer): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

export function blobFile(layout: string, digest: string): string {
  const [algorithm, hex] = digest.split(':');
  if (algorithm !== 'sha256' || hex === undefined) throw new OciImageError(`not a sha256 digest: ${digest}`);
  return join(layout, 'blobs', 'sha256', hex);
}

function writeJsonBlob(layout: string, value: unknown, mediaType: string): Descriptor {
  const bytes = Buffer.from(JSON.stringify(value));
  const digest = sha256(bytes);
  writeFileSync(blobFile(layout, digest), bytes);
  return { mediaType, digest, size: bytes.length };
}

/** What follows the last ':' of the reference's last path element ("latest" when there is none). */
export function tagOf(reference: string): string {
  const last = reference.slice(reference.lastIndexOf('/') + 1);
  const colon = last.lastIndexOf(':');
  return colon < 0 ? 'latest' : last.slice(colon + 1);
}

export interface AssembledImage {
  layout: string;
  manifest: Descriptor;
  /** Compressed bytes of all layers. */
  layerBytes: number;
}

/**
 * Writes an OCI image layout at `layout` (replaced): the layers in order, a linux/amd64 config created at the
 * epoch (so the digest is a function of the inputs alone), and one index entry per reference, annotated with
 * the names containerd and OCI tools import it under.
 */
export function writeImageLayout(
  layout: string,
  layers: LayerBlob[],
  config: ImageConfigOptions,
  references: string[],
): AssembledImage {
  if (references.length === 0) throw new OciImageError('an image needs at least one reference');
  rmSync(layout, { recursive: true, force: true });
  mkdirSync(join(layout, 'blobs', 'sha256'), { recursive: true });
  writeFileSync(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  for (const layer of layers) copyFileSync(layer.path, blobFile(layout, layer.descriptor.digest));
  const imageConfig = {
    created: '1970-01-01T00:00:00Z',
    architecture: 'amd64',
    os: 'linux',
    config: {
      ...(config.user === undefined ? {} : { User: config.user }),
      ...(config.env === undefined ? {} : { Env: config.env }),
      ...(config.entrypoint === undefined ? {} : { Entrypoint: config.entrypoint }),
      ...(config.cmd === undefined ? {} : { Cmd: config.cmd }),
      ...(config.workingDir === undefined ? {} : { WorkingDir: config.workingDir }),
    },
    rootfs: { type: 'layers', diff_ids: layers.map((l) => l.diffId) },
    history: layers.map(() => ({ created: '1970-01-01T00:00:00Z', created_by: 'portico toolchain/oci.ts' })),
  };
  const configDescriptor = writeJsonBlob(layout, imageConfig, OCI_CONFIG);
  const manifest = writeJsonBlob(
    layout,
    {
      schemaVersion: 2,
      mediaType: OCI_MANIFEST,
      config: configDescriptor,
      layers: layers.map((l) => l.descriptor),
    },
    OCI_MANIFEST,
  );
  const index = {
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.index.v1+json',
    manifests: references.map((reference) => ({
      ...manifest,
      annotations: {
        'io.containerd.image.name': reference,
        'org.opencontainers.image.ref.name': tagOf(reference),
      },
    })),
  };
  writeFileSync(join(layout, 'index.json'), JSON.stringify(index));
  return { layout, manifest, layerBytes: layers.reduce((sum, l) => sum + l.descriptor.size, 0) };
}

/** GNU tar flags that make an archive a function of its files alone: sorted names, root owner, epoch times. */
export const REPRODUCIBLE_TAR = [
  '--sort=name',
  '--owner=0',
  '--group=0',
  '--numeric-owner',
  '--mtime=@0',
  '--format=posix',
  '--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime',
];

/** Tars the contents of `dir` into `tarFile` with GNU tar, reproducibly. */
export function tarDirectory(dir: string, tarFile: string): void {
  const result = spawnSync('tar', [...REPRODUCIBLE_TAR, '-C', dir, '-cf', tarFile, '.'], {
    encoding: 'utf8',
  });
  if (result.error !== undefined) throw new OciImageError(`tar: ${result.error.message}`);
  if (result.status !== 0) throw new OciImageError(`tar of ${dir} failed: ${result.stderr}`);
}

/** The layout as one tar file (what `ctr images import` and `skopeo copy oci-archive:FILE` read). */
export function writeImageArchive(layout: string, archive: string): void {
  tarDirectory(layout, `${archive}.tmp`);
  renameSync(`${archive}.tmp`, archive);
}

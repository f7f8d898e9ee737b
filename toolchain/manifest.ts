// Where the built toolchain is: the cache folder (outside git) and the manifest `npm run toolchain` writes.
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = fileURLToPath(new URL('..', import.meta.url)).replace(/\/$/, '');

export interface Manifest {
  goVersion: string;
  /** Binary name → absolute path. */
  binaries: Record<string, string>;
  /** Image recipe → its OCI archive and the references it is imported under. */
  images: Record<string, { archive: string; names: string[]; summary: string }>;
  files: {
    /** The Gateway API standard-channel CRDs, as the pinned release ships them (in the Go module cache). */
    gatewayApiCrds: string;
  };
}

/** PORTICO_CACHE_DIR, else $XDG_CACHE_HOME/portico, else ~/.cache/portico. */
export function cacheDir(): string {
  const env = process.env;
  if (env.PORTICO_CACHE_DIR) return env.PORTICO_CACHE_DIR;
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'portico');
}

export function manifestPath(): string {
  return join(cacheDir(), 'toolchain.json');
}

export function readManifest(): Manifest {
  const path = manifestPath();
  if (!existsSync(path)) throw new Error(`no toolchain at ${path}: run \`npm run toolchain\` first`);
  return JSON.parse(readFileSync(path, 'utf8')) as Manifest;
}

export function binary(manifest: Manifest, name: string): string {
  const path = manifest.binaries[name];
  if (path === undefined || !existsSync(path)) {
    throw new Error(`toolchain binary ${name} is missing: run \`npm run toolchain\``);
  }
  return path;
}

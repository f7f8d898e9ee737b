// A test image the cluster tests import into containerd: base layers (or none) and one layer of files a recipe
// writes, assembled once per key and kept in the toolchain cache (images/<kind>/<key>). No registry, no Docker.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cacheDir } from './manifest.js';
import {
  compressLayer,
  type ImageConfigOptions,
  type LayerBlob,
  tarDirectory,
  writeImageArchive,
  writeImageLayout,
} from './oci.js';

export interface TestImage {
  archive: string;
  name: string;
  summary: string;
}

export interface TestImageRecipe {
  /** The cache folder's kind (`redis`, `openid-provider`). */
  kind: string;
  /** A hash of everything the image is made of: a new key is a new image. */
  key: string;
  /** The reference containerd imports it under. */
  name: string;
  /** Layers under the recipe's own. */
  base: LayerBlob[];
  config: ImageConfigOptions;
  /** Writes the files of the image's own layer under `root`. */
  fill(root: string): void;
}

/** The image of `recipe`, from the cache when it was made before. */
export async function cachedTestImage(recipe: TestImageRecipe): Promise<TestImage> {
  const { name } = recipe;
  const dir = join(cacheDir(), 'images', recipe.kind, recipe.key);
  const archive = join(dir, 'image.tar');
  const summaryFile = join(dir, 'summary.txt');
  if (existsSync(archive) && existsSync(summaryFile))
    return { archive, name, summary: readFileSync(summaryFile, 'utf8') };
  rmSync(dir, { recursive: true, force: true });
  const root = join(dir, 'root');
  mkdirSync(root, { recursive: true });
  recipe.fill(root);
  tarDirectory(root, join(dir, 'layer.tar'));
  const layer = await compressLayer(join(dir, 'layer.tar'), join(dir, 'layer.tar.gz'));
  rmSync(join(dir, 'layer.tar'));
  rmSync(root, { recursive: true, force: true });
  const layout = join(dir, 'layout');
  const image = writeImageLayout(layout, [...recipe.base, layer], recipe.config, [name]);
  rmSync(layer.path);
  writeImageArchive(layout, archive);
  const summary = `${name} ${image.manifest.digest} ${image.layerBytes} bytes compressed`;
  writeFileSync(summaryFile, summary);
  return { archive, name, summary };
}

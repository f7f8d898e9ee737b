// Names of a fleet's Kubernetes objects (DESIGN.md §1): readable, unique by hash, within 63 characters.
import { createHash } from 'node:crypto';

/** `default/eg` → `proxy-default-eg-e41e7b31`; `merged-eg` → `proxy-merged-eg-668ac7ae`. */
export function fleetInfraName(key: string): string {
  const hash = createHash('sha256').update(key).digest('hex').slice(0, 8);
  let body = key.replaceAll('/', '-').slice(0, 48);
  if (body.endsWith('-')) body = body.slice(0, -1);
  return `proxy-${body}-${hash}`;
}

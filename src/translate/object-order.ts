// How the translator names and orders objects: `namespace/name`, and the total orders its output follows so that it
// never depends on the order objects arrived in.

export function nsName(o: { metadata: { namespace?: string; name: string } }): string {
  return `${o.metadata.namespace ?? ''}/${o.metadata.name}`;
}

/** Total order by namespace/name, so output never depends on input order. */
export function byNsName(a: { metadata: { namespace?: string; name: string } }, b: typeof a): number {
  const ka = nsName(a);
  const kb = nsName(b);
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}

/** Oldest first (creation time, then namespace/name); objects without a creation time count as newest. */
export function byAge(
  a: { metadata: { namespace?: string; name: string; creationTimestamp?: string } },
  b: typeof a,
): number {
  const ta = a.metadata.creationTimestamp;
  const tb = b.metadata.creationTimestamp;
  if (ta !== tb) {
    if (ta === undefined) return 1;
    if (tb === undefined) return -1;
    return ta < tb ? -1 : 1;
  }
  return byNsName(a, b);
}

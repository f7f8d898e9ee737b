// What an access step established about a credential (a JWT's signature, a password's bcrypt hash), kept a while so
// that a client's repeated credential is not checked again at once: at most `entries` (the oldest goes first),
// each until its own time. A new config builds new steps, and with them empty caches.
export interface VerifiedCache<V> {
  /** The value kept for `key`, if its time has not passed (`nowMs`); a lapsed one is dropped. */
  get(key: string, nowMs: number): V | undefined;
  set(key: string, value: V, untilMs: number): void;
}

export function verifiedCache<V>(entries: number): VerifiedCache<V> {
  const kept = new Map<string, { value: V; untilMs: number }>();
  return {
    get(key, nowMs) {
      const entry = kept.get(key);
      if (entry === undefined) return undefined;
      if (nowMs < entry.untilMs) return entry.value;
      kept.delete(key);
      return undefined;
    },
    set(key, value, untilMs) {
      if (!kept.has(key) && kept.size >= entries) kept.delete(kept.keys().next().value!);
      kept.set(key, { value, untilMs });
    },
  };
}

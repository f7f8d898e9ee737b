// SNI certificate selection for HTTPS listeners. Secure contexts are built once per secret content and
// reused across config swaps, so an unrelated change does not re-parse every key.
import { createSecureContext, type SecureContext } from 'node:tls';
import type { ListenerTls, TlsSecret } from '../ir/fleet-config.js';

export interface CertificateTable {
  exact: Map<string, SecureContext>;
  /** `*.example.com` as `.example.com`, longest first. */
  wildcards: { suffix: string; context: SecureContext }[];
  /** For `*`, or when the client sends no SNI: the `*` entry, else the first certificate. */
  fallback: SecureContext;
  /** The secret behind `fallback`: https servers need PEMs for their default context. */
  fallbackSecret: TlsSecret;
}

export interface SecureContextCache {
  get(secret: TlsSecret): SecureContext;
  /** Forget contexts of secrets not in `keep`. */
  retain(keep: Iterable<TlsSecret>): void;
}

export function createSecureContextCache(): SecureContextCache {
  const cache = new Map<string, { cert: string; key: string; context: SecureContext }>();
  return {
    get(secret) {
      const hit = cache.get(secret.name);
      if (hit !== undefined && hit.cert === secret.certificatePem && hit.key === secret.privateKeyPem) {
        return hit.context;
      }
      let context: SecureContext;
      try {
        context = createSecureContext({ cert: secret.certificatePem, key: secret.privateKeyPem });
      } catch (error) {
        // The message never includes the key material, only what was wrong with it.
        throw new Error(`secret '${secret.name}': ${(error as Error).message}`);
      }
      cache.set(secret.name, { cert: secret.certificatePem, key: secret.privateKeyPem, context });
      return context;
    },
    retain(keep) {
      const names = new Set([...keep].map((s) => s.name));
      for (const name of cache.keys()) if (!names.has(name)) cache.delete(name);
    },
  };
}

export function compileCertificates(
  tls: ListenerTls,
  secrets: ReadonlyMap<string, TlsSecret>,
  cache: SecureContextCache,
): CertificateTable {
  const exact = new Map<string, SecureContext>();
  const wildcards: CertificateTable['wildcards'] = [];
  let any: { context: SecureContext; secret: TlsSecret } | undefined;
  let first: { context: SecureContext; secret: TlsSecret } | undefined;
  for (const choice of tls.certificates) {
    const name = choice.secrets[0];
    const secret = name === undefined ? undefined : secrets.get(name);
    if (secret === undefined) continue;
    const context = cache.get(secret);
    first ??= { context, secret };
    for (const raw of choice.hostnames) {
      const hostname = raw.toLowerCase();
      if (hostname === '*') any ??= { context, secret };
      else if (hostname.startsWith('*.')) wildcards.push({ suffix: hostname.slice(1), context });
      else if (!exact.has(hostname)) exact.set(hostname, context);
    }
  }
  const fallback = any ?? first;
  if (fallback === undefined) throw new Error('no usable certificate');
  wildcards.sort((a, b) => b.suffix.length - a.suffix.length);
  return { exact, wildcards, fallback: fallback.context, fallbackSecret: fallback.secret };
}

export function selectCertificate(table: CertificateTable, serverName: string): SecureContext {
  const name = serverName.toLowerCase();
  const exact = table.exact.get(name);
  if (exact !== undefined) return exact;
  for (const w of table.wildcards)
    if (name.length > w.suffix.length && name.endsWith(w.suffix)) return w.context;
  return table.fallback;
}

// SNI certificate selection for HTTPS listeners. Secure contexts are built once per secret content and
// reused across config swaps, so an unrelated change does not re-parse every key.
import { constants } from 'node:crypto';
import { createSecureContext, type SecureContext } from 'node:tls';
import type { ClientValidation, ListenerTls, TlsSecret } from '../../ir/fleet-config.js';
import { PorticoError } from '../../platform/errors.js';

export interface CertificateTable {
  exact: Map<string, SecureContext>;
  /** `*.example.com` as `.example.com`, longest first. */
  wildcards: { suffix: string; context: SecureContext }[];
  /** For `*`, or when the client sends no SNI: the `*` entry, else the first certificate. */
  fallback: SecureContext;
  /** The secret behind `fallback`: https servers need PEMs for their default context. */
  fallbackSecret: TlsSecret;
  /**
   * Whether TLS sessions may be resumed: only when every name gets the same certificate. Node decides a
   * resumption on the listener's default context before the SNI callback runs (a resumed handshake never
   * reaches it), so a session of one certificate would otherwise resume a handshake for another's name.
   */
  resumable: boolean;
  /** The client certificate check of the port (`spec.tls.frontend`); undefined: no client certificate asked. */
  clientValidation: ClientValidation | undefined;
}

export interface SecureContextCache {
  /** The context serving `secret`, verifying client certificates against `caPem` when given. */
  get(secret: TlsSecret, caPem?: string): SecureContext;
  /** Forget contexts of secrets not in `keep`, and those verifying clients against a CA bundle not in `caBundles`. */
  retain(keep: Iterable<TlsSecret>, caBundles: ReadonlySet<string | undefined>): void;
}

export function createSecureContextCache(): SecureContextCache {
  // By secret name, then by CA bundle ('' for none): a port that verifies clients needs contexts of its own.
  const cache = new Map<string, Map<string, { cert: string; key: string; context: SecureContext }>>();
  return {
    get(secret, caPem) {
      const byCa = cache.get(secret.name) ?? new Map();
      cache.set(secret.name, byCa);
      const hit = byCa.get(caPem ?? '');
      if (hit !== undefined && hit.cert === secret.certificatePem && hit.key === secret.privateKeyPem) {
        return hit.context;
      }
      let context: SecureContext;
      try {
        context = createSecureContext({
          cert: secret.certificatePem,
          key: secret.privateKeyPem,
          ...(caPem === undefined ? {} : { ca: caPem }),
        });
      } catch (error) {
        // The message never includes the key material, only what was wrong with it.
        throw new PorticoError('E_CERTIFICATE', `secret '${secret.name}': ${(error as Error).message}`);
      }
      byCa.set(caPem ?? '', { cert: secret.certificatePem, key: secret.privateKeyPem, context });
      return context;
    },
    retain(keep, caBundles) {
      const names = new Set([...keep].map((s) => s.name));
      for (const [name, byCa] of cache) {
        if (names.has(name))
          for (const ca of byCa.keys()) if (!caBundles.has(ca || undefined)) byCa.delete(ca);
        if (!names.has(name) || byCa.size === 0) cache.delete(name);
      }
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
  const served = new Set<SecureContext>();
  for (const choice of tls.certificates) {
    const name = choice.secrets[0];
    const secret = name === undefined ? undefined : secrets.get(name);
    if (secret === undefined) continue;
    const context = cache.get(secret, tls.clientValidation?.caPem);
    served.add(context);
    first ??= { context, secret };
    for (const raw of choice.hostnames) {
      const hostname = raw.toLowerCase();
      if (hostname === '*') any ??= { context, secret };
      else if (hostname.startsWith('*.')) wildcards.push({ suffix: hostname.slice(1), context });
      else if (!exact.has(hostname)) exact.set(hostname, context);
    }
  }
  const fallback = any ?? first;
  if (fallback === undefined) throw new PorticoError('E_CERTIFICATE', 'no usable certificate');
  wildcards.sort((a, b) => b.suffix.length - a.suffix.length);
  return {
    exact,
    wildcards,
    fallback: fallback.context,
    fallbackSecret: fallback.secret,
    resumable: served.size === 1,
    clientValidation: tls.clientValidation,
  };
}

/**
 * The default context's options for a table: without session tickets when it serves several certificates
 * (see `resumable`), or checks client certificates (a resumed session skips the check, and would carry a
 * client verified against an earlier CA bundle). Node keeps no session-id cache of its own, so no ticket means
 * no resumption at all. With a client check, the default context verifies against its CA too.
 */
export function sessionOptions(table: CertificateTable | undefined): { secureOptions: number; ca?: string } {
  const validation = table?.clientValidation;
  if (validation !== undefined) return { secureOptions: constants.SSL_OP_NO_TICKET, ca: validation.caPem };
  return { secureOptions: table === undefined || table.resumable ? 0 : constants.SSL_OP_NO_TICKET };
}

/**
 * What a TLS server asks of each new connection's client: a certificate or none, and whether a handshake whose
 * client certificate is missing or does not verify fails (AllowValidOnly) or goes on (AllowInsecureFallback).
 */
export function clientCertificateRequest(table: CertificateTable | undefined): {
  requestCert: boolean;
  rejectUnauthorized: boolean;
} {
  const mode = table?.clientValidation?.mode;
  return { requestCert: mode !== undefined, rejectUnauthorized: mode === 'AllowValidOnly' };
}

function wildcardOf(
  table: CertificateTable,
  name: string,
): CertificateTable['wildcards'][number] | undefined {
  for (const w of table.wildcards) if (name.length > w.suffix.length && name.endsWith(w.suffix)) return w;
  return undefined;
}

export function selectCertificate(table: CertificateTable, serverName: string): SecureContext {
  const name = serverName.toLowerCase();
  return table.exact.get(name) ?? wildcardOf(table, name)?.context ?? table.fallback;
}

/**
 * The hostname of the Gateway listener whose certificate entry serves `serverName`: itself when exact, the
 * wildcard (`*.example.com`) that matches it, else `*`. Listeners may share one certificate, so two names
 * belong to the same listener only when this is equal, not when their certificates are.
 */
export function listenerHostnameOf(table: CertificateTable, serverName: string): string {
  const name = serverName.toLowerCase();
  if (table.exact.has(name)) return name;
  const wildcard = wildcardOf(table, name);
  return wildcard === undefined ? '*' : `*${wildcard.suffix}`;
}

/**
 * A request for `host` (without its port) on a connection whose certificate was chosen for `serverName` (its
 * SNI) falls under another listener entry: the client must ask again on a connection of its own (421, RFC 9110
 * §15.5.20). Without SNI the client took the default certificate for whatever it asks: nothing to compare.
 */
export function misdirectedHost(table: CertificateTable, serverName: unknown, host: string): boolean {
  if (typeof serverName !== 'string' || serverName === '') return false;
  return listenerHostnameOf(table, host) !== listenerHostnameOf(table, serverName);
}

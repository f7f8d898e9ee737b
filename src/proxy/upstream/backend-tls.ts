// TLS toward backends (BackendTLSPolicy): the socket a pool opens to a cluster whose policy asks for TLS, with
// the policy's SNI, trust and name checks; and pools kept per policy settings, so a plaintext pool and a TLS one
// to the same address never share a connection.
import { Socket as NetSocket, type Socket } from 'node:net';
import { checkServerIdentity, connect, type PeerCertificate } from 'node:tls';
import type { ClusterTls, Endpoint } from '../../ir/fleet-config.js';
import type { EndpointPoolLike, UpstreamPools } from './pools.js';

/**
 * Why `cert` does not carry the names the policy asks for, or undefined when it does: one of its
 * subjectAltNames when given (DNS names with the usual wildcard rule, URIs exactly), else the server name.
 */
export function backendNameProblem(tls: ClusterTls, cert: PeerCertificate): Error | undefined {
  if (tls.subjectAltNames.length === 0) return checkServerIdentity(tls.serverName, cert);
  const uris = new Set(
    (cert.subjectaltname ?? '')
      .split(', ')
      .filter((entry) => entry.startsWith('URI:'))
      .map((entry) => entry.slice(4)),
  );
  for (const san of tls.subjectAltNames) {
    if (san.type === 'URI' && uris.has(san.value)) return undefined;
    // Only the certificate's DNS names count for a Hostname SAN, never its subject CN.
    if (
      san.type === 'Hostname' &&
      cert.subjectaltname !== undefined &&
      checkServerIdentity(san.value, cert) === undefined
    )
      return undefined;
  }
  const wanted = tls.subjectAltNames.map((s) => `${s.type}:${s.value}`).join(', ');
  return new Error(`backend certificate names none of the policy's subjectAltNames (${wanted})`);
}

/** The certificate and key a Gateway presents to its TLS backends (spec.tls.backend.clientCertificateRef). */
export interface ClientCertificate {
  certificatePem: string;
  privateKeyPem: string;
}

/**
 * A socket to `host:port` speaking TLS as the policy says; `alpn`: the protocols offered; `client`: the
 * certificate presented when the backend asks for one.
 */
export function connectBackendTls(
  host: string,
  port: number,
  tls: ClusterTls,
  alpn: string[],
  client?: ClientCertificate,
): Socket {
  if (tls.refused !== undefined) {
    // Fail closed: a policy that cannot be honoured yields a socket that errors at once, never a plaintext one.
    const socket = new NetSocket();
    const refused = tls.refused;
    process.nextTick(() => socket.destroy(new Error(`backend TLS policy ${tls.policy}: ${refused}`)));
    return socket;
  }
  return connect({
    host,
    port,
    servername: tls.serverName,
    ...(tls.caPem === undefined ? {} : { ca: tls.caPem }),
    ...(client === undefined ? {} : { cert: client.certificatePem, key: client.privateKeyPem }),
    rejectUnauthorized: true,
    ALPNProtocols: alpn,
    checkServerIdentity: (_host, cert) => backendNameProblem(tls, cert),
  });
}

/** The settings a TLS pool is made for, as one key (the same settings share pools across clusters). */
const keys = new WeakMap<ClusterTls, string>();
function tlsKey(tls: ClusterTls): string {
  let key = keys.get(tls);
  if (key === undefined) {
    key = JSON.stringify([
      tls.serverName,
      tls.caPem ?? '',
      tls.subjectAltNames,
      tls.refused ?? '',
      tls.policy,
    ]);
    keys.set(tls, key);
  }
  return key;
}

/** Endpoint pools per TLS settings: each settings' own registry, made on first use. */
export interface TlsUpstreamPools<P extends EndpointPoolLike> {
  get(tls: ClusterTls, endpoint: Endpoint): P;
  /** Keeps the pools of these clusters' settings and endpoints; the rest close gracefully. */
  retain(clusters: Iterable<{ tls: ClusterTls; endpoints: readonly Endpoint[] }>): void;
  /** The client certificate new connections present; a change closes every pool (gracefully) to use it. */
  useClientCertificate(client: ClientCertificate | undefined): void;
  destroy(): void;
}

export function createTlsUpstreamPools<P extends EndpointPoolLike>(
  registry: (tls: ClusterTls, client: ClientCertificate | undefined) => UpstreamPools<P>,
): TlsUpstreamPools<P> {
  const bySettings = new Map<string, UpstreamPools<P>>();
  let client: ClientCertificate | undefined;
  return {
    get(tls, endpoint) {
      const key = tlsKey(tls);
      let pools = bySettings.get(key);
      if (pools === undefined) {
        pools = registry(tls, client);
        bySettings.set(key, pools);
      }
      return pools.get(endpoint);
    },
    retain(clusters) {
      const wanted = new Map<string, Endpoint[]>();
      for (const c of clusters) {
        const key = tlsKey(c.tls);
        const list = wanted.get(key) ?? [];
        list.push(...c.endpoints);
        wanted.set(key, list);
      }
      for (const [key, pools] of bySettings) {
        const keep = wanted.get(key);
        if (keep === undefined) {
          bySettings.delete(key);
          pools.retain([]);
        } else pools.retain(keep);
      }
    },
    useClientCertificate(next) {
      if (next?.certificatePem === client?.certificatePem && next?.privateKeyPem === client?.privateKeyPem)
        return;
      client = next;
      for (const pools of bySettings.values()) pools.retain([]);
      bySettings.clear();
    },
    destroy() {
      for (const pools of bySettings.values()) pools.destroy();
      bySettings.clear();
    },
  };
}

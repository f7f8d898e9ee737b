// The discovery CA and server certificate as Secrets in the controller namespace: created by
// `portico certgen --kubernetes` (idempotent: only what is absent) and read by the controller, which also signs
// each fleet's own client certificate with the CA (fleet-client-secrets.ts). No client identity is shared.

import { generateCertificates } from '../../certificates/certs.js';
import { CONTROLLER_SERVICE, MANAGED_BY, MANAGED_BY_LABEL } from '../../ir/well-known.js';
import { PorticoError } from '../../platform/errors.js';
import type { Logger } from '../../platform/log-line.js';
import { type ApiClient, expectStatus, type JsonObject } from './api-client.js';

export const CA_SECRET = 'portico-gateway-ca';
export const SERVER_CERT_SECRET = 'portico-gateway-server-cert';

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');

function secretPath(namespace: string, name?: string): string {
  const base = `/api/v1/namespaces/${namespace}/secrets`;
  return name === undefined ? base : `${base}/${name}`;
}

function secret(namespace: string, name: string, type: string, data: Record<string, string>): JsonObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type,
    metadata: {
      name,
      namespace,
      labels: {
        'app.kubernetes.io/name': CONTROLLER_SERVICE,
        [MANAGED_BY_LABEL]: MANAGED_BY,
      },
    },
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
  };
}

async function readSecret(client: ApiClient, namespace: string, name: string) {
  const reply = await client.request('GET', secretPath(namespace, name));
  if (reply.status === 404) return undefined;
  const body = expectStatus(reply, `get Secret ${namespace}/${name}`, [200]);
  const data = (body.data ?? {}) as Record<string, string>;
  return Object.fromEntries(
    Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
  );
}

/**
 * Creates the CA and server Secrets when absent, or all anew with `rotate`; returns the names it wrote. The
 * fleets' client certificates follow: the controller re-issues any not signed by the current CA.
 */
export async function ensureCertificateSecrets(
  client: ApiClient,
  namespace: string,
  options: { rotate?: boolean } = {},
): Promise<string[]> {
  const [ca, server] = await Promise.all(
    [CA_SECRET, SERVER_CERT_SECRET].map((n) => readSecret(client, namespace, n)),
  );
  const wanted: JsonObject[] = [];
  // Without a CA everything is issued anew: leftovers of an interrupted run are replaced, and the CA Secret is
  // written last, so a run cut short anywhere leaves no CA (or a server certificate of another CA, below) and
  // the next run starts over consistently.
  const mismatch = ca !== undefined && server !== undefined && server['ca.crt'] !== ca['ca.crt'];
  // An existing CA is replaced only on purpose (rotate) or when the server certificate is not its own.
  const replaceCa = options.rotate === true || mismatch;
  if (replaceCa || ca === undefined) {
    const certs = generateCertificates({ namespace });
    const tls = 'kubernetes.io/tls';
    wanted.push(
      secret(namespace, SERVER_CERT_SECRET, tls, {
        'ca.crt': certs.caCertPem,
        'tls.crt': certs.serverCertPem,
        'tls.key': certs.serverKeyPem,
      }),
      secret(namespace, CA_SECRET, 'Opaque', { 'ca.crt': certs.caCertPem, 'ca.key': certs.caKeyPem }),
    );
  } else {
    const caCert = ca['ca.crt'];
    const caKey = ca['ca.key'];
    if (caCert === undefined || caKey === undefined) {
      throw new PorticoError('E_KUBERNETES', `Secret ${namespace}/${CA_SECRET} lacks ca.crt or ca.key`);
    }
    if (server === undefined) {
      throw new PorticoError(
        'E_KUBERNETES',
        `Secret ${namespace}/${SERVER_CERT_SECRET} is missing while ${CA_SECRET} exists: delete ${CA_SECRET} to regenerate all`,
      );
    }
  }
  const created: string[] = [];
  for (const s of wanted) {
    const name = String((s.metadata as JsonObject).name);
    let reply = await client.request('POST', secretPath(namespace), s);
    // A CA that appeared since we looked was made by another certgen run: theirs stands (the next run repairs).
    if (reply.status === 409 && (name !== CA_SECRET || replaceCa)) {
      expectStatus(
        await client.request('DELETE', secretPath(namespace, name)),
        `delete Secret ${namespace}/${name}`,
        [200, 202, 404],
      );
      reply = await client.request('POST', secretPath(namespace), s);
    }
    if (reply.status === 409) continue; // created meanwhile by another certgen run: theirs stands
    expectStatus(reply, `create Secret ${namespace}/${name}`);
    created.push(name);
  }
  return created;
}

export interface CertificateAuthority {
  caCertPem: string;
  caKeyPem: string;
}

/** What `pick` finds in Secret `name`, waiting (saying so to `log`) until certgen has created it. */
async function waitForSecret<T>(
  client: ApiClient,
  namespace: string,
  name: string,
  pick: (data: Record<string, string>) => T | undefined,
  log: Logger,
  retryMs: number,
): Promise<T> {
  for (;;) {
    try {
      const data = await readSecret(client, namespace, name);
      const found = data === undefined ? undefined : pick(data);
      if (found !== undefined) return found;
      log.warn(`waiting for Secret ${namespace}/${name} (created by portico certgen --kubernetes)`);
    } catch (error) {
      log.warn((error as Error).message);
    }
    await new Promise((resolve) => setTimeout(resolve, retryMs));
  }
}

/** The CA (certificate and key) that signs fleet client certificates, waiting until certgen created it. */
export function waitForCertificateAuthority(
  client: ApiClient,
  namespace: string,
  log: Logger,
  retryMs = 1000,
): Promise<CertificateAuthority> {
  return waitForSecret(
    client,
    namespace,
    CA_SECRET,
    (data) => {
      const caCertPem = data['ca.crt'];
      const caKeyPem = data['ca.key'];
      return caCertPem === undefined || caKeyPem === undefined ? undefined : { caCertPem, caKeyPem };
    },
    log,
    retryMs,
  );
}

export interface ServerTls {
  caPem: string;
  certPem: string;
  keyPem: string;
}

/** The discovery server's certificate, waiting (saying so to `log`) until certgen has created it. */
export function waitForServerTls(
  client: ApiClient,
  namespace: string,
  log: Logger,
  retryMs = 1000,
): Promise<ServerTls> {
  return waitForSecret(
    client,
    namespace,
    SERVER_CERT_SECRET,
    (data) => {
      const caPem = data['ca.crt'];
      const certPem = data['tls.crt'];
      const keyPem = data['tls.key'];
      return caPem === undefined || certPem === undefined || keyPem === undefined
        ? undefined
        : { caPem, certPem, keyPem };
    },
    log,
    retryMs,
  );
}

// Controller Namespace Mode: each fleet's own discovery client identity, a `kubernetes.io/tls` Secret signed by
// the discovery CA and mounted only by that fleet's pods. The certificate names the fleet, so the discovery
// server gives it that fleet's config and nothing else. The Secret is owned by the fleet's ServiceAccount: it
// goes when the fleet's infrastructure goes (also deleted explicitly when the controller sees the fleet go).
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { fleetOfSubjectAltName, issueFleetCertificate } from '../../certificates/certs.js';
import { fleetClientSecretName } from '../../infra/kubernetes/render.js';
import type { FleetInfra } from '../../ir/fleet-infra.js';
import { MANAGED_BY, MANAGED_BY_LABEL } from '../../ir/well-known.js';
import { type ApiClient, expectStatus, type JsonObject } from './api-client.js';
import type { CertificateAuthority } from './certificate-secrets.js';

/** A certificate this close to its end (or older than its CA) is issued again. */
const RENEW_BEFORE_MS = 30 * 86_400_000;

export interface FleetClientSecrets {
  /** Makes the fleet's Secret exist and current, owned by `account`; returns why it cannot, if so. */
  ensure(infra: FleetInfra, account: { name: string; uid: string }): Promise<string | undefined>;
  remove(namespace: string, infraName: string): Promise<void>;
  /** Forget what was checked (a new leader checks everything again). */
  reset(): void;
}

export interface FleetClientSecretsOptions {
  client: ApiClient;
  ca: CertificateAuthority;
  log(line: string): void;
  now?: () => Date;
}

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const unb64 = (text: unknown) =>
  typeof text === 'string' ? Buffer.from(text, 'base64').toString('utf8') : '';

function secretPath(namespace: string, name?: string): string {
  const base = `/api/v1/namespaces/${namespace}/secrets`;
  return name === undefined ? base : `${base}/${name}`;
}

export function createFleetClientSecrets(options: FleetClientSecretsOptions): FleetClientSecrets {
  const { client, ca, log } = options;
  const now = options.now ?? (() => new Date());
  const caCert = new X509Certificate(ca.caCertPem);
  /** Secret key → what was last seen current: its fleet, owner and the certificate's end. */
  let current = new Map<string, { fleet: string; owner: string; notAfter: number }>();

  function body(infra: FleetInfra, account: { name: string; uid: string }, name: string): JsonObject {
    const issued = issueFleetCertificate(ca.caCertPem, ca.caKeyPem, infra.fleet, { now: now() });
    return {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'kubernetes.io/tls',
      metadata: {
        name,
        namespace: infra.namespace,
        labels: { ...infra.labels },
        ownerReferences: [{ apiVersion: 'v1', kind: 'ServiceAccount', name: account.name, uid: account.uid }],
      },
      data: { 'ca.crt': b64(ca.caCertPem), 'tls.crt': b64(issued.certPem), 'tls.key': b64(issued.keyPem) },
    };
  }

  /** The certificate's end when the Secret holds a current identity of `fleet` from our CA, else undefined. */
  function validUntil(secret: JsonObject, fleet: string): number | undefined {
    const data = (secret.data ?? {}) as Record<string, unknown>;
    try {
      const cert = new X509Certificate(unb64(data['tls.crt']));
      const notAfter = new Date(cert.validTo).getTime();
      const ok =
        fleetOfSubjectAltName(cert.subjectAltName) === fleet &&
        cert.checkIssued(caCert) &&
        cert.verify(caCert.publicKey) &&
        cert.checkPrivateKey(createPrivateKey(unb64(data['tls.key']))) &&
        unb64(data['ca.crt']) === ca.caCertPem &&
        notAfter - now().getTime() > RENEW_BEFORE_MS;
      return ok ? notAfter : undefined;
    } catch {
      return undefined;
    }
  }

  return {
    async ensure(infra, account) {
      const name = fleetClientSecretName(infra.name);
      const key = `${infra.namespace}/${name}`;
      const seen = current.get(key);
      if (
        seen?.fleet === infra.fleet &&
        seen.owner === account.uid &&
        seen.notAfter - now().getTime() > RENEW_BEFORE_MS
      ) {
        return undefined;
      }
      const reply = await client.request('GET', secretPath(infra.namespace, name));
      if (reply.status === 404) {
        const created = body(infra, account, name);
        expectStatus(
          await client.request('POST', secretPath(infra.namespace), created),
          `create Secret ${key}`,
          [201],
        );
        log(`created Secret ${key} (the discovery client identity of fleet ${infra.fleet})`);
        current.set(key, {
          fleet: infra.fleet,
          owner: account.uid,
          notAfter: validUntil(created, infra.fleet) ?? 0,
        });
        return undefined;
      }
      const existing = expectStatus(reply, `get Secret ${key}`, [200]);
      const metadata = (existing.metadata ?? {}) as JsonObject;
      const labels = (metadata.labels ?? {}) as Record<string, string>;
      if (labels[MANAGED_BY_LABEL] !== MANAGED_BY) {
        return `Secret ${key} already exists and is not managed by portico-gateway; it is left alone`;
      }
      const owners = (metadata.ownerReferences ?? []) as { uid?: string }[];
      const until = validUntil(existing, infra.fleet);
      if (until !== undefined && owners.some((o) => o.uid === account.uid)) {
        current.set(key, { fleet: infra.fleet, owner: account.uid, notAfter: until });
        return undefined;
      }
      // Expiring, from another CA, for another fleet, or orphaned: a fresh identity, same name.
      const replacement = body(infra, account, name);
      const patch = { metadata: replacement.metadata, data: replacement.data };
      expectStatus(
        await client.request(
          'PATCH',
          secretPath(infra.namespace, name),
          patch,
          'application/merge-patch+json',
        ),
        `update Secret ${key}`,
        [200],
      );
      log(`renewed Secret ${key} (the discovery client identity of fleet ${infra.fleet})`);
      current.set(key, {
        fleet: infra.fleet,
        owner: account.uid,
        notAfter: validUntil(replacement, infra.fleet) ?? 0,
      });
      return undefined;
    },
    async remove(namespace, infraName) {
      const name = fleetClientSecretName(infraName);
      current.delete(`${namespace}/${name}`);
      // Only ever ours: a same-name Secret someone else made was left alone when the fleet existed, and stays so.
      const found = await client.request('GET', secretPath(namespace, name));
      if (found.status === 404) return;
      const labels = ((found.body.metadata as JsonObject | undefined)?.labels ?? {}) as Record<
        string,
        string
      >;
      if (labels[MANAGED_BY_LABEL] !== MANAGED_BY) return;
      const reply = await client.request('DELETE', secretPath(namespace, name));
      expectStatus(reply, `delete Secret ${namespace}/${name}`, [200, 202, 404]);
      if (reply.status !== 404) log(`deleted Secret ${namespace}/${name}`);
    },
    reset() {
      current = new Map();
    },
  };
}

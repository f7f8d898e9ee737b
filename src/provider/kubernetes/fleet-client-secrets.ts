// Controller Namespace Mode: each fleet's own discovery client identity, a `kubernetes.io/tls` Secret signed by
// the discovery CA and mounted only by that fleet's pods. The certificate names the fleet, so the discovery
// server gives it that fleet's config and nothing else. The Secret is owned by the fleet's ServiceAccount: it
// goes when the fleet's infrastructure goes (also deleted explicitly when the controller sees the fleet go).
// Certificates are short-lived and renewed two thirds into their life (a timer asks for a pass then); a renewal
// records the certificate it replaced and until when it stays accepted (fleet-certificate-pins.ts).
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { fleetCertificateFacts, issueFleetCertificate } from '../../certificates/certs.js';
import {
  DEFAULT_FLEET_CERTIFICATE_LIFETIME,
  type FleetCertificateLifetime,
  needsRenewal,
  nextRenewalAt,
  type Validity,
} from '../../certificates/fleet-certificate-lifetime.js';
import { fleetClientSecretName } from '../../infra/kubernetes/render.js';
import type { FleetInfra } from '../../ir/fleet-infra.js';
import { MANAGED_BY, MANAGED_BY_LABEL } from '../../ir/well-known.js';
import type { Logger } from '../../platform/log-line.js';
import { type ApiClient, expectStatus, type JsonObject } from './api-client.js';
import type { CertificateAuthority } from './certificate-secrets.js';
import { PREVIOUS_CERTIFICATE_ANNOTATION, PREVIOUS_UNTIL_ANNOTATION } from './fleet-certificate-pins.js';
import { mergePatch } from './merge-patch.js';

// setTimeout cannot wait longer than 2^31-1 ms; a later renewal is looked at again then.
const MAX_TIMER_MS = 2_147_483_647;

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
  log: Logger;
  now?: () => Date;
  /** Certificate lifetime and the grace of a replaced one. Default 7 days and 5 minutes. */
  lifetime?: FleetCertificateLifetime;
  /** The earliest certificate checked is due for renewal: run a pass (which calls `ensure`). */
  onRenewalDue?: () => void;
  /**
   * The fingerprint of the certificate in the Secret `namespace/name` as the watch sees it now (undefined: no
   * such Secret). A Secret someone deleted or replaced is then noticed without asking the API server each pass.
   */
  observed?: (namespace: string, name: string) => string | undefined;
}

/** What was last seen current in a fleet's Secret. */
interface Seen {
  fleet: string;
  owner: string;
  fingerprint: string;
  validity: Validity;
  /** The labels and annotations it was brought to (JSON of secretMetadata). */
  metadata: string;
}

type Metadata = { labels: Record<string, string>; annotations: Record<string, string> };

/**
 * The fleet's labels, and its Gateway's spec.infrastructure labels and annotations: the Secret is made for the
 * Gateway like every other object of its fleet, so it carries them too (the fleet's own labels win).
 */
function secretMetadata(infra: FleetInfra): Metadata {
  return {
    labels: { ...infra.propagated.labels, ...infra.labels },
    annotations: { ...infra.propagated.annotations },
  };
}

/** Annotations the Secret carries for its certificate, which only a renewal changes. */
const CERTIFICATE_ANNOTATIONS = new Set([PREVIOUS_CERTIFICATE_ANNOTATION, PREVIOUS_UNTIL_ANNOTATION]);

/** A merge patch bringing the Secret's labels and annotations to `wanted`; undefined when they are already. */
function metadataPatch(existing: JsonObject, wanted: Metadata): JsonObject | undefined {
  const metadata = (existing.metadata ?? {}) as JsonObject;
  const found = {
    labels: (metadata.labels ?? {}) as Record<string, string>,
    annotations: (metadata.annotations ?? {}) as Record<string, string>,
  };
  // The certificate's own annotations stay as they are: only a renewal changes them.
  const kept = Object.entries(found.annotations).filter(([k]) => CERTIFICATE_ANNOTATIONS.has(k));
  const patch = mergePatch(found, {
    labels: wanted.labels,
    annotations: { ...wanted.annotations, ...Object.fromEntries(kept) },
  });
  return patch === undefined ? undefined : { metadata: patch };
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
  const lifetime = options.lifetime ?? DEFAULT_FLEET_CERTIFICATE_LIFETIME;
  const identityIn = (secret: JsonObject, fleet: string) => secretIdentity(secret, fleet, ca);
  /** Secret key (`namespace/name`) → what was last seen current there. */
  let current = new Map<string, Seen>();
  let renewalTimer: NodeJS.Timeout | undefined;

  /** Arms the timer for the earliest renewal among the Secrets seen. */
  function scheduleRenewal(): void {
    clearTimeout(renewalTimer);
    const due = nextRenewalAt([...current.values()].map((s) => s.validity));
    if (due === undefined || options.onRenewalDue === undefined) return;
    const wait = Math.min(Math.max(due - now().getTime(), 0), MAX_TIMER_MS);
    renewalTimer = setTimeout(() => options.onRenewalDue?.(), wait);
    renewalTimer.unref();
  }

  function stillCurrent(key: string, infra: FleetInfra, name: string, owner: string): boolean {
    const seen = current.get(key);
    return (
      seen?.fleet === infra.fleet &&
      seen.owner === owner &&
      seen.metadata === JSON.stringify(secretMetadata(infra)) &&
      !needsRenewal(seen.validity, now().getTime(), lifetime.lifetimeMs) &&
      (options.observed === undefined || options.observed(infra.namespace, name) === seen.fingerprint)
    );
  }

  function remember(key: string, owner: string, secret: JsonObject, infra: FleetInfra): void {
    const identity = identityIn(secret, infra.fleet);
    if (identity === undefined) current.delete(key);
    else current.set(key, { ...identity, owner, metadata: JSON.stringify(secretMetadata(infra)) });
    scheduleRenewal();
  }

  const writer = secretWriter(options, lifetime, now);
  return {
    async ensure(infra, account) {
      const name = fleetClientSecretName(infra.name);
      const key = `${infra.namespace}/${name}`;
      if (stillCurrent(key, infra, name, account.uid)) return undefined;
      const reply = await client.request('GET', secretPath(infra.namespace, name));
      if (reply.status === 404) {
        remember(key, account.uid, await writer.create(infra, account, name), infra);
        return undefined;
      }
      const existing = expectStatus(reply, `get Secret ${key}`, [200]);
      const metadata = (existing.metadata ?? {}) as JsonObject;
      const labels = (metadata.labels ?? {}) as Record<string, string>;
      if (labels[MANAGED_BY_LABEL] !== MANAGED_BY) {
        return `Secret ${key} already exists and is not managed by portico-gateway; it is left alone`;
      }
      const owners = (metadata.ownerReferences ?? []) as { uid?: string }[];
      const identity = identityIn(existing, infra.fleet);
      const owned = owners.some((o) => o.uid === account.uid);
      if (
        identity !== undefined &&
        owned &&
        !needsRenewal(identity.validity, now().getTime(), lifetime.lifetimeMs)
      ) {
        remember(key, account.uid, await writer.relabel(infra, existing, key), infra);
        return undefined;
      }
      // Due for renewal: the proxies still hold the old one for a moment. Otherwise (from another CA, for another
      // fleet, or orphaned by a recreated fleet) it must not work a moment longer.
      const renewed = identity !== undefined && owned ? identity.fingerprint : undefined;
      remember(key, account.uid, await writer.replace(infra, account, existing, renewed), infra);
      return undefined;
    },
    async remove(namespace, infraName) {
      const name = fleetClientSecretName(infraName);
      current.delete(`${namespace}/${name}`);
      scheduleRenewal();
      await deleteManagedSecret(client, log, namespace, name);
    },
    reset() {
      current = new Map();
      clearTimeout(renewalTimer);
    },
  };
}

/** Only ever ours: a same-name Secret someone else made was left alone when the fleet existed, and stays so. */
async function deleteManagedSecret(
  client: ApiClient,
  log: Logger,
  namespace: string,
  name: string,
): Promise<void> {
  const found = await client.request('GET', secretPath(namespace, name));
  if (found.status === 404) return;
  const labels = ((found.body.metadata as JsonObject | undefined)?.labels ?? {}) as Record<string, string>;
  if (labels[MANAGED_BY_LABEL] !== MANAGED_BY) return;
  const reply = await client.request('DELETE', secretPath(namespace, name));
  expectStatus(reply, `delete Secret ${namespace}/${name}`, [200, 202, 404]);
  if (reply.status !== 404) log.info(`deleted Secret ${namespace}/${name}`);
}

/** The Secret's certificate when it is a usable identity of `fleet` from our CA, else undefined. */
function secretIdentity(
  secret: JsonObject,
  fleet: string,
  ca: CertificateAuthority,
): Omit<Seen, 'owner' | 'metadata'> | undefined {
  const data = (secret.data ?? {}) as Record<string, unknown>;
  try {
    const caCert = new X509Certificate(ca.caCertPem);
    const certPem = unb64(data['tls.crt']);
    const cert = new X509Certificate(certPem);
    const facts = fleetCertificateFacts(certPem);
    const ok =
      facts.fleet === fleet &&
      cert.checkIssued(caCert) &&
      cert.verify(caCert.publicKey) &&
      cert.checkPrivateKey(createPrivateKey(unb64(data['tls.key']))) &&
      unb64(data['ca.crt']) === ca.caCertPem;
    return ok ? { fleet, fingerprint: facts.fingerprint, validity: facts.validity } : undefined;
  } catch {
    return undefined;
  }
}

/** Writes a fleet's Secret with a freshly issued identity: created, or replacing what is there. */
function secretWriter(
  options: FleetClientSecretsOptions,
  lifetime: FleetCertificateLifetime,
  now: () => Date,
) {
  const { client, ca, log } = options;
  function body(infra: FleetInfra, account: { name: string; uid: string }, name: string): JsonObject {
    const issued = issueFleetCertificate(ca.caCertPem, ca.caKeyPem, infra.fleet, {
      now: now(),
      lifetimeMs: lifetime.lifetimeMs,
    });
    const { labels, annotations } = secretMetadata(infra);
    return {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'kubernetes.io/tls',
      metadata: {
        name,
        namespace: infra.namespace,
        labels,
        ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
        ownerReferences: [{ apiVersion: 'v1', kind: 'ServiceAccount', name: account.name, uid: account.uid }],
      },
      data: { 'ca.crt': b64(ca.caCertPem), 'tls.crt': b64(issued.certPem), 'tls.key': b64(issued.keyPem) },
    };
  }
  async function patch(namespace: string, name: string, change: JsonObject): Promise<JsonObject> {
    const reply = await client.request(
      'PATCH',
      secretPath(namespace, name),
      change,
      'application/merge-patch+json',
    );
    return expectStatus(reply, `update Secret ${namespace}/${name}`, [200]);
  }
  return {
    async create(infra: FleetInfra, account: { name: string; uid: string }, name: string) {
      const created = body(infra, account, name);
      const key = `${infra.namespace}/${name}`;
      expectStatus(
        await client.request('POST', secretPath(infra.namespace), created),
        `create Secret ${key}`,
        [201],
      );
      log.info(`created Secret ${key} (the discovery client identity of fleet ${infra.fleet})`);
      return created;
    },
    /** A current identity whose labels or annotations are not the fleet's any more: only those change. */
    async relabel(infra: FleetInfra, existing: JsonObject, key: string): Promise<JsonObject> {
      const change = metadataPatch(existing, secretMetadata(infra));
      if (change === undefined) return existing;
      const name = String((existing.metadata as JsonObject).name);
      const served = await patch(infra.namespace, name, change);
      log.info(`updated the labels and annotations of Secret ${key}`);
      return served;
    },
    /** `renewed`: the fingerprint of the certificate this renews, accepted for the grace; none: refused at once. */
    async replace(
      infra: FleetInfra,
      account: { name: string; uid: string },
      existing: JsonObject,
      renewed: string | undefined,
    ) {
      const name = String((existing.metadata as JsonObject).name);
      const replacement = body(infra, account, name);
      const until = new Date(now().getTime() + lifetime.graceMs).toISOString();
      // A merge patch: null removes a record left by an earlier renewal, and metadata the fleet no longer has.
      const wanted = metadataPatch(existing, secretMetadata(infra))?.metadata as JsonObject | undefined;
      const annotations = {
        ...(wanted?.annotations as JsonObject | undefined),
        [PREVIOUS_CERTIFICATE_ANNOTATION]: renewed ?? null,
        [PREVIOUS_UNTIL_ANNOTATION]: renewed === undefined ? null : until,
      };
      const metadata = { ...(replacement.metadata as JsonObject), ...wanted, annotations };
      await patch(infra.namespace, name, { metadata, data: replacement.data });
      log.info(
        `renewed Secret ${infra.namespace}/${name} (the discovery client identity of fleet ${infra.fleet}${renewed === undefined ? '; the one it held is refused at once' : `; the one it held is accepted until ${until}`})`,
      );
      return replacement;
    },
  };
}

// Which Gateway API CRDs the cluster has installed, and at which bundle version: read at start and again every
// `intervalMs` (GETs by name, so the controller's RBAC names exactly those CRDs), with whether the API server
// serves ClusterTrustBundles (its discovery document, as GEP-5075 asks). A change wakes a pass, whose
// GatewayClass statuses say SupportedVersion and the features claimed, and is logged: a warning while the CRDs are
// older than this build or missing, a line when they are fine again.
import {
  BUNDLE_VERSION_ANNOTATION,
  CHANNEL_ANNOTATION,
  type InstalledCrds,
  READ_GATEWAY_API_CRDS,
} from '../../api/gateway-api-bundle.js';
import type { Logger } from '../../platform/log-line.js';
import { supportedVersionVerdict } from '../../translate/supported-version.js';
import type { ApiClient, JsonObject } from './api-client.js';

const CRD_PATH = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
const CLUSTER_TRUST_BUNDLES = {
  groupVersion: 'certificates.k8s.io/v1beta1',
  resource: 'clustertrustbundles',
};
const DEFAULT_INTERVAL_MS = 30_000;

export interface InstalledCrdsWatch {
  /** As last read; undefined until a read succeeded (or while the controller may not read CRDs). */
  current(): InstalledCrds | undefined;
  /** The first read; later reads follow on their own. */
  start(): Promise<void>;
  stop(): void;
}

/** One read of every CRD Portico uses; undefined when the API server would not say (RBAC, an outage). */
export async function readInstalledCrds(client: ApiClient): Promise<InstalledCrds | undefined> {
  const versions: Record<string, string | null> = {};
  const channels: Record<string, string> = {};
  for (const crd of READ_GATEWAY_API_CRDS) {
    const reply = await client.request('GET', `${CRD_PATH}/${crd}.gateway.networking.k8s.io`);
    if (reply.status === 404) versions[crd] = null;
    else if (reply.status === 200) {
      const annotations = ((reply.body.metadata as JsonObject | undefined)?.annotations ?? {}) as Record<
        string,
        unknown
      >;
      const version = annotations[BUNDLE_VERSION_ANNOTATION];
      versions[crd] = typeof version === 'string' ? version : '';
      const channel = annotations[CHANNEL_ANNOTATION];
      channels[crd] = typeof channel === 'string' ? channel : '';
    } else return undefined;
  }
  const clusterTrustBundles = await servesResource(client, CLUSTER_TRUST_BUNDLES);
  return { versions, channels, ...(clusterTrustBundles === undefined ? {} : { clusterTrustBundles }) };
}

/** Whether the discovery document of the group version lists the resource; undefined when it would not say. */
async function servesResource(
  client: ApiClient,
  what: { groupVersion: string; resource: string },
): Promise<boolean | undefined> {
  const reply = await client.request('GET', `/apis/${what.groupVersion}`);
  if (reply.status === 404) return false;
  if (reply.status !== 200) return undefined;
  const resources = Array.isArray(reply.body.resources) ? (reply.body.resources as JsonObject[]) : [];
  return resources.some((r) => r.name === what.resource);
}

export function watchInstalledCrds(options: {
  client: ApiClient;
  log: Logger;
  onChange: () => void;
  intervalMs?: number;
}): InstalledCrdsWatch {
  const { client, log } = options;
  let installed: InstalledCrds | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  let unreadable = false;

  async function read(): Promise<void> {
    let next: InstalledCrds | undefined;
    try {
      next = await readInstalledCrds(client);
    } catch {
      next = undefined;
    }
    if (next === undefined) {
      // Kept as it was: a read that failed says nothing new about the CRDs.
      if (!unreadable)
        log.warn(
          'cannot read the Gateway API CRDs (customresourcedefinitions get): their versions are not checked',
        );
      unreadable = true;
      return;
    }
    unreadable = false;
    if (JSON.stringify(next) === JSON.stringify(installed)) return;
    const before = installed === undefined ? undefined : supportedVersionVerdict(installed);
    installed = next;
    const verdict = supportedVersionVerdict(next);
    if (!verdict.ok) log.warn(verdict.message);
    else if (before === undefined || !before.ok) log.info(verdict.message);
    options.onChange();
  }

  function schedule(): void {
    if (stopped) return;
    timer = setTimeout(() => {
      void read().finally(schedule);
    }, options.intervalMs ?? DEFAULT_INTERVAL_MS);
  }

  return {
    current: () => installed,
    async start() {
      await read();
      schedule();
    },
    stop() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
    },
  };
}

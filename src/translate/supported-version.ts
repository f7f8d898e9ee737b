// GatewayClass `SupportedVersion`: whether the Gateway API CRDs the cluster has installed are the release this
// build is made for (or newer). Older CRDs lack fields and validation this build relies on, and a missing CRD
// means its kind is not served at all; either way the kinds that are installed keep working, and every class
// this controller serves says what it found.
import {
  bundleMinor,
  GATEWAY_API_BUNDLE_VERSION,
  type InstalledCrds,
  READ_GATEWAY_API_CRDS,
} from '../api/gateway-api-bundle.js';
import type { Verdict } from './conditions.js';

const [BUILT_MAJOR, BUILT_MINOR] = bundleMinor(GATEWAY_API_BUNDLE_VERSION) ?? [1, 0];

function older(version: string): boolean {
  const found = bundleMinor(version);
  if (found === undefined) return true;
  const [major, minor] = found;
  return major < BUILT_MAJOR || (major === BUILT_MAJOR && minor < BUILT_MINOR);
}

/** `v1.6.3 (gateways, httproutes); no bundle-version (grpcroutes)`: the CRDs grouped by what they carry. */
function byVersion(crds: readonly string[], installed: InstalledCrds): string {
  const groups = new Map<string, string[]>();
  for (const crd of crds) {
    const version = installed.versions[crd] ?? '';
    const label = version === '' ? 'no bundle-version annotation' : version;
    groups.set(label, [...(groups.get(label) ?? []), crd]);
  }
  return [...groups].map(([label, names]) => `${label} (${names.join(', ')})`).join('; ');
}

export function supportedVersionVerdict(installed: InstalledCrds): Verdict {
  const missing = READ_GATEWAY_API_CRDS.filter((crd) => installed.versions[crd] === null);
  const present = READ_GATEWAY_API_CRDS.filter((crd) => typeof installed.versions[crd] === 'string');
  const outdated = present.filter((crd) => older(installed.versions[crd] as string));
  if (missing.length === 0 && outdated.length === 0) {
    return {
      ok: true,
      reason: 'SupportedVersion',
      message: `Gateway API CRDs ${byVersion(present, installed)} installed; this controller is built for ${GATEWAY_API_BUNDLE_VERSION}`,
    };
  }
  const problems: string[] = [];
  if (outdated.length > 0) {
    problems.push(
      `older than ${GATEWAY_API_BUNDLE_VERSION}, which this controller is built for: ${byVersion(outdated, installed)}`,
    );
  }
  if (missing.length > 0) problems.push(`not installed: ${missing.join(', ')}`);
  return {
    ok: false,
    reason: 'UnsupportedVersion',
    message: `Gateway API CRDs ${problems.join('; ')}. The kinds that are installed keep working; install the ${GATEWAY_API_BUNDLE_VERSION} standard CRDs`,
  };
}

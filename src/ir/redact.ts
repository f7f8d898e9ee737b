// Private keys never leave the process: every dump of a fleet config (proxy admin, standalone admin,
// `portico translate`) goes through here.
import type { FleetConfig } from './fleet-config.js';

export const REDACTED = '<redacted>';

/** A copy of the config with every private key replaced, safe to print. */
export function redactSecrets(config: FleetConfig): FleetConfig {
  return { ...config, secrets: config.secrets.map((s) => ({ ...s, privateKeyPem: REDACTED })) };
}

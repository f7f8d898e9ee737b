// Secrets' values, from `data` (base64) with `stringData` over it; TLS Secrets' PEM certificate chain and key.
import type { Secret } from '../api/core.js';

export function secretValue(s: Secret, key: string): string | undefined {
  const plain = s.stringData?.[key];
  if (plain !== undefined) return plain;
  const encoded = s.data[key];
  return encoded === undefined ? undefined : Buffer.from(encoded, 'base64').toString('utf8');
}

/** The certificate and key PEM text, or undefined when either is missing or not PEM. */
export function tlsSecretPems(s: Secret): { certificatePem: string; privateKeyPem: string } | undefined {
  const certificatePem = secretValue(s, 'tls.crt');
  const privateKeyPem = secretValue(s, 'tls.key');
  if (certificatePem === undefined || privateKeyPem === undefined) return undefined;
  if (!certificatePem.includes('-----BEGIN CERTIFICATE-----')) return undefined;
  if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(privateKeyPem)) return undefined;
  return { certificatePem, privateKeyPem };
}

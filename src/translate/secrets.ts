// TLS Secrets: the PEM certificate chain and key, from `data` (base64) with `stringData` over it.
import type { Secret } from '../api/core.js';

function value(s: Secret, key: string): string | undefined {
  const plain = s.stringData?.[key];
  if (plain !== undefined) return plain;
  const encoded = s.data[key];
  return encoded === undefined ? undefined : Buffer.from(encoded, 'base64').toString('utf8');
}

/** The certificate and key PEM text, or undefined when either is missing or not PEM. */
export function tlsSecretPems(s: Secret): { certificatePem: string; privateKeyPem: string } | undefined {
  const certificatePem = value(s, 'tls.crt');
  const privateKeyPem = value(s, 'tls.key');
  if (certificatePem === undefined || privateKeyPem === undefined) return undefined;
  if (!certificatePem.includes('-----BEGIN CERTIFICATE-----')) return undefined;
  if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(privateKeyPem)) return undefined;
  return { certificatePem, privateKeyPem };
}

// Golden inputs name certificates by placeholder: `{{certificate NAME}}`, `{{key NAME}}` (JSON-escaped PEM, for
// double-quoted YAML strings) and `{{certificate64 NAME}}`, `{{key64 NAME}}` (base64, for `data`). Each NAME is a
// self-signed pair made at test time (no key is checked in); outputs show `<certificate NAME>` in its place.
import { selfSigned, type TestCertificate } from '../support/certs.js';

const made = new Map<string, TestCertificate>();

function pair(name: string): TestCertificate {
  let cert = made.get(name);
  if (cert === undefined) {
    cert = selfSigned(name, [`${name}.example.com`]);
    made.set(name, cert);
  }
  return cert;
}

const PLACEHOLDER = /\{\{(certificate|key|certificate64|key64) ([a-z0-9-]+)\}\}/g;

/** `text` with every placeholder replaced. */
export function withTestCertificates(text: string): string {
  return text.replace(PLACEHOLDER, (_, what: string, name: string) => {
    const { certificatePem, privateKeyPem } = pair(name);
    const pem = what.startsWith('certificate') ? certificatePem : privateKeyPem;
    return what.endsWith('64') ? Buffer.from(pem).toString('base64') : JSON.stringify(pem).slice(1, -1);
  });
}

/** The placeholder label of a certificate made here (`<certificate NAME>`), or undefined. */
export function certificateLabel(pem: string): string | undefined {
  for (const [name, cert] of made) if (cert.certificatePem === pem) return `<certificate ${name}>`;
  return undefined;
}

/** A CA bundle with each test certificate in it shown by label, one per line; other text as it is. */
export function bundleLabel(pem: string): string {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/g) ?? [];
  const labels = blocks.map((b) => certificateLabel(b.endsWith('\n') ? b : `${b}\n`));
  if (blocks.length === 0 || labels.some((l) => l === undefined)) return pem;
  return labels.join('\n');
}

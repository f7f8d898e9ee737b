// Whether a TLS Secret can serve: its certificate parses, its key parses, and the key is the certificate's. Parsing
// is pure computation (no I/O, no clock), so the translator stays deterministic; memoised per Secret object
// in the caller's memo.
import { createPrivateKey, X509Certificate } from 'node:crypto';
import type { Secret } from '../api/core.js';

function problem(pems: { certificatePem: string; privateKeyPem: string }): string | undefined {
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(pems.certificatePem);
  } catch {
    return 'tls.crt does not hold a valid PEM certificate';
  }
  let key: ReturnType<typeof createPrivateKey>;
  try {
    key = createPrivateKey(pems.privateKeyPem);
  } catch {
    return 'tls.key does not hold a valid PEM private key';
  }
  return certificate.checkPrivateKey(key)
    ? undefined
    : 'tls.key is not the private key of the certificate in tls.crt';
}

/** Why the Secret's certificate and key cannot serve TLS, or undefined when they can. */
export function certificateProblem(
  secret: Secret,
  pems: { certificatePem: string; privateKeyPem: string },
  verdicts: WeakMap<Secret, string | undefined>,
): string | undefined {
  if (verdicts.has(secret)) return verdicts.get(secret);
  const verdict = problem(pems);
  verdicts.set(secret, verdict);
  return verdict;
}

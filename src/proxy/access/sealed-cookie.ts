// Sealed cookie values: JSON encrypted and authenticated with AES-256-GCM (confidentiality and integrity in
// one), under a key derived by HKDF from a Secret's bytes for one purpose, the cookie's name bound in as
// additional data so a value of one cookie never opens as another's. Format: base64url(iv | ciphertext | tag).
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { MIN_COOKIE_SECRET_BYTES } from '../../ir/field-rules.js';

const IV_BYTES = 12;
const TAG_BYTES = 16;

/** The 32-byte key of `purpose` derived from a secret (base64). */
export function cookieKey(secretBase64: string, purpose: string): Buffer {
  const secret = Buffer.from(secretBase64, 'base64');
  if (secret.length < MIN_COOKIE_SECRET_BYTES)
    throw new Error(`the cookie secret must be at least ${MIN_COOKIE_SECRET_BYTES} bytes (base64)`);
  return Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), `portico ${purpose}`, 32));
}

export function seal(key: Buffer, name: string, value: unknown): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(name));
  const body = Buffer.concat([cipher.update(JSON.stringify(value)), cipher.final()]);
  return Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url');
}

/** The value sealed under `key` for cookie `name`; undefined when it is not one (forged, altered, another key). */
export function open(key: Buffer, name: string, sealed: string): unknown {
  const bytes = Buffer.from(sealed, 'base64url');
  if (bytes.length < IV_BYTES + TAG_BYTES + 2) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(name));
    decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
    const plain = Buffer.concat([
      decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)),
      decipher.final(),
    ]);
    return JSON.parse(plain.toString()) as unknown;
  } catch {
    return undefined;
  }
}

/** The value of cookie `name` among `cookie` header values; undefined when absent. */
export function cookieValue(cookieHeaders: readonly string[], name: string): string | undefined {
  for (const header of cookieHeaders) {
    for (const pair of header.split(';')) {
      const at = pair.indexOf('=');
      if (at > 0 && pair.slice(0, at).trim() === name) return pair.slice(at + 1).trim();
    }
  }
  return undefined;
}

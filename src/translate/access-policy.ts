// An AccessPolicy's fleet resource: what the proxy checks (src/proxy/access/), and why it cannot be honoured.

import { createHash } from 'node:crypto';
import { type AccessPolicy, OIDC_DEFAULTS } from '../api/access-policy.js';
import type { Secret } from '../api/core.js';
import { PORTICO_GROUP } from '../api/data-plane-proxy.js';
import { durationMs } from '../api/semantic-rules.js';
import type { ExternalAuthorization } from '../ir/external-auth.js';
import {
  cidrProblem,
  cookieSecretProblem,
  fetchUrlProblem,
  keySetProblem,
  passwordHashProblem,
  timeoutProblem,
} from '../ir/field-rules.js';
import {
  type AccessPolicyConfig,
  type AccessRuleConfig,
  type ApiKeysConfig,
  type BasicAuthUser,
  fleetPolicyName,
  type JwtConfig,
  type JwtProviderConfig,
} from '../ir/fleet-config.js';
import type { OidcAuthentication } from '../ir/oidc.js';
import { CREDENTIALS_LABEL } from '../ir/well-known.js';
import { serviceOf } from './backends.js';
import { notFound, referenceGranted, type SnapshotLookup } from './lookup.js';
import { externalAuthorization } from './route-rules.js';
import { secretValue } from './secrets.js';

/** The Secret key a JWKS is read from. */
export const JWKS_SECRET_KEY = 'jwks.json';
const DEFAULT_JWKS_CACHE_SECONDS = 300;
/** A JWT longer than this is refused unread (a header of 8 KiB is what most servers take at all). */
const MAX_TOKEN_BYTES = 8192;

/** The policy's Secret `name` in `namespace` (default its own), if it may refer to it and it exists. */
export function policySecret(
  policy: { kind: string; metadata: { namespace?: string } },
  ref: { name: string; namespace?: string },
  lookup: SnapshotLookup,
): { secret: Secret } | { problem: string } {
  const from = policy.metadata.namespace ?? '';
  const ns = ref.namespace ?? from;
  const granted = referenceGranted(lookup, {
    fromGroup: 'gateway.portico.io',
    fromKind: policy.kind,
    fromNamespace: from,
    toGroup: '',
    toKind: 'Secret',
    toNamespace: ns,
    toName: ref.name,
  });
  if (!granted)
    return { problem: `Secret ${ns}/${ref.name} is in another namespace and no ReferenceGrant allows it` };
  const secret = lookup.secrets.get(`${ns}/${ref.name}`);
  if (secret !== undefined) return { secret };
  // On a cluster the controller sees only labelled credentials: a Secret that exists unlabelled reads as missing.
  const hint = ` (on Kubernetes, label it ${CREDENTIALS_LABEL}=true so that Portico may read it)`;
  return { problem: `${notFound(lookup, 'Secret', ns, ref.name)}${hint}` };
}

/** The Secret key an htpasswd file is read from. */
export const HTPASSWD_SECRET_KEY = '.htpasswd';

function basicAuthConfig(
  policy: AccessPolicy,
  lookup: SnapshotLookup,
  problems: string[],
): AccessPolicyConfig['basicAuth'] {
  const basic = policy.spec.basicAuth;
  if (basic === undefined) return undefined;
  const found = policySecret(policy, basic.secretRef, lookup);
  if ('problem' in found) {
    problems.push(`spec.basicAuth.secretRef: ${found.problem}`);
    return undefined;
  }
  const text = secretValue(found.secret, HTPASSWD_SECRET_KEY);
  if (text === undefined) {
    problems.push(`spec.basicAuth.secretRef: the Secret has no key ${HTPASSWD_SECRET_KEY}`);
    return undefined;
  }
  const users: BasicAuthUser[] = [];
  text.split('\n').forEach((line, i) => {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) return;
    const colon = trimmed.indexOf(':');
    const hash = colon < 0 ? '' : trimmed.slice(colon + 1);
    // The line number, never the line: it holds a hash.
    const why = colon <= 0 ? 'is not user:hash' : passwordHashProblem(hash);
    if (why !== undefined)
      problems.push(`spec.basicAuth.secretRef: ${HTPASSWD_SECRET_KEY} line ${i + 1} ${why}`);
    else users.push({ user: trimmed.slice(0, colon), credentialDigest: hash });
  });
  return { users: users.sort((a, b) => (a.user < b.user ? -1 : a.user > b.user ? 1 : 0)) };
}

function apiKeysConfig(
  policy: AccessPolicy,
  lookup: SnapshotLookup,
  problems: string[],
): ApiKeysConfig | undefined {
  const keys = policy.spec.apiKeys;
  if (keys === undefined) return undefined;
  const digests = new Set<string>();
  keys.secretRefs.forEach((ref, i) => {
    const found = policySecret(policy, ref, lookup);
    if ('problem' in found) {
      problems.push(`spec.apiKeys.secretRefs[${i}]: ${found.problem}`);
      return;
    }
    const names = new Set([...Object.keys(found.secret.data), ...Object.keys(found.secret.stringData ?? {})]);
    for (const name of names) {
      const key = secretValue(found.secret, name);
      if (key !== undefined && key !== '') digests.add(createHash('sha256').update(key).digest('hex'));
    }
  });
  const source = keys.source ?? { type: 'Header' as const, name: 'x-api-key' };
  return {
    source: { type: source.type, name: source.type === 'Header' ? source.name.toLowerCase() : source.name },
    credentialDigests: [...digests].sort(),
  };
}

function jwtConfig(policy: AccessPolicy, lookup: SnapshotLookup, problems: string[]): JwtConfig | undefined {
  const jwt = policy.spec.jwt;
  if (jwt === undefined) return undefined;
  const providers = jwt.providers.map((p, i): JwtProviderConfig => {
    const at = `spec.jwt.providers[${i}].jwks`;
    const out: JwtProviderConfig = {
      name: p.name,
      issuer: p.issuer,
      audiences: [...(p.audiences ?? [])],
      claimHeaders: (p.claimToHeaders ?? []).map((c) => ({ claim: c.claim, header: c.header.toLowerCase() })),
      requiredClaims: (p.requiredClaims ?? []).map((c) => ({ name: c.name, values: [...c.values] })),
    };
    const remote = p.jwks.remote;
    if (remote !== undefined) {
      const why = fetchUrlProblem(remote.url);
      if (why !== undefined) problems.push(`${at}.remote.url: ${why}`);
      out.remote = {
        url: remote.url,
        cacheSeconds: remote.cacheDurationSeconds ?? DEFAULT_JWKS_CACHE_SECONDS,
      };
      return out;
    }
    const found = policySecret(policy, p.jwks.secretRef!, lookup);
    if ('problem' in found) {
      problems.push(`${at}.secretRef: ${found.problem}`);
      return { ...out, keys: '{"keys":[]}' };
    }
    const text = secretValue(found.secret, JWKS_SECRET_KEY);
    const why = text === undefined ? `has no key ${JWKS_SECRET_KEY}` : keySetProblem(text);
    if (why !== undefined) problems.push(`${at}.secretRef: Secret ${JWKS_SECRET_KEY} ${why}`);
    return { ...out, keys: why === undefined ? text! : '{"keys":[]}' };
  });
  const sources = (
    jwt.tokenSources ?? [{ type: 'Header' as const, name: 'authorization', prefix: 'Bearer ' }]
  ).map((t) =>
    t.type === 'Header'
      ? {
          type: 'Header' as const,
          name: t.name.toLowerCase(),
          ...(t.prefix === undefined ? {} : { prefix: t.prefix }),
        }
      : { type: t.type, name: t.name },
  );
  return { sources, maxTokenBytes: MAX_TOKEN_BYTES, providers };
}

/** The Secret keys an OIDC client's secret and its cookie secret are read from. */
export const OIDC_CLIENT_SECRET_KEY = 'client-secret';
export const OIDC_COOKIE_SECRET_KEY = 'cookie-secret';

/** One Secret value an OIDC field names, or a problem (naming the field and key, never the value). */
function oidcSecret(
  policy: AccessPolicy,
  field: 'clientSecretRef' | 'cookieSecretRef',
  key: string,
  lookup: SnapshotLookup,
  problems: string[],
): string | undefined {
  const found = policySecret(policy, policy.spec.oidc![field], lookup);
  const text = 'problem' in found ? undefined : secretValue(found.secret, key)?.trim();
  if ('problem' in found) problems.push(`spec.oidc.${field}: ${found.problem}`);
  else if (text === undefined || text === '')
    problems.push(`spec.oidc.${field}: the Secret has no key ${key}`);
  return text;
}

/** A duration field in ms, its default when absent; a problem when it is out of the proxy's range. */
function oidcDuration(
  value: string | undefined,
  fallback: number,
  field: string,
  problems: string[],
): number {
  if (value === undefined) return fallback;
  const ms = durationMs(value);
  if (ms === undefined || ms < 1000) {
    problems.push(`spec.oidc.${field}: must be at least 1s`);
    return fallback;
  }
  return ms;
}

function oidcConfig(
  policy: AccessPolicy,
  lookup: SnapshotLookup,
  problems: string[],
): OidcAuthentication | undefined {
  const oidc = policy.spec.oidc;
  if (oidc === undefined) return undefined;
  const clientSecret = oidcSecret(policy, 'clientSecretRef', OIDC_CLIENT_SECRET_KEY, lookup, problems);
  const cookieSecret = oidcSecret(policy, 'cookieSecretRef', OIDC_COOKIE_SECRET_KEY, lookup, problems);
  const cookieWhy = cookieSecret === undefined ? undefined : cookieSecretProblem(cookieSecret);
  if (cookieWhy !== undefined)
    problems.push(`spec.oidc.cookieSecretRef: ${OIDC_COOKIE_SECRET_KEY} ${cookieWhy}`);
  const issuerWhy = fetchUrlProblem(oidc.issuer);
  if (issuerWhy !== undefined) problems.push(`spec.oidc.issuer: ${issuerWhy}`);
  const timeoutMs = oidcDuration(oidc.timeout, OIDC_DEFAULTS.timeoutMs, 'timeout', problems);
  const sessionMs = oidcDuration(oidc.sessionDuration, OIDC_DEFAULTS.sessionMs, 'sessionDuration', problems);
  if (timeoutProblem(timeoutMs) !== undefined)
    problems.push(`spec.oidc.timeout: ${timeoutProblem(timeoutMs)}`);
  const scopes = [...new Set([...OIDC_DEFAULTS.scopes, ...(oidc.scopes ?? [])])];
  return {
    issuer: oidc.issuer.replace(/\/+$/, ''),
    clientId: oidc.clientID,
    clientSecret: clientSecret ?? '',
    redirectUri: oidc.redirectURI ?? OIDC_DEFAULTS.redirectURI,
    logoutPath: oidc.logoutPath ?? OIDC_DEFAULTS.logoutPath,
    ...(oidc.postLogoutRedirectURI === undefined
      ? {}
      : { postLogoutRedirectUri: oidc.postLogoutRedirectURI }),
    scopes,
    cookieName: oidc.cookieName ?? OIDC_DEFAULTS.cookieName,
    cookieSecret: cookieSecret ?? '',
    ...(oidc.idTokenHeader === undefined ? {} : { idTokenHeader: oidc.idTokenHeader.toLowerCase() }),
    forwardAccessToken: oidc.forwardAccessToken === true,
    sessionSeconds: Math.ceil(sessionMs / 1000),
    timeoutMs,
  };
}

/** The policy in fleet-config terms; a value the proxy would refuse makes it `refused` (every request denied). */
export function compileAccessPolicy(
  policy: AccessPolicy,
  lookup: SnapshotLookup,
): { config: AccessPolicyConfig; problem?: string } {
  const ns = policy.metadata.namespace ?? '';
  const problems: string[] = [];
  const jwt = jwtConfig(policy, lookup, problems);
  const basicAuth = basicAuthConfig(policy, lookup, problems);
  const apiKeys = apiKeysConfig(policy, lookup, problems);
  const oidc = oidcConfig(policy, lookup, problems);
  const rules = (policy.spec.rules ?? []).map((r, i): AccessRuleConfig => {
    const out: AccessRuleConfig = { name: r.name ?? `rule-${i}`, action: r.action };
    if (r.clientCIDRs !== undefined) {
      r.clientCIDRs.forEach((c, j) => {
        const why = cidrProblem(c);
        if (why !== undefined) problems.push(`spec.rules[${i}].clientCIDRs[${j}]: ${why}`);
      });
      out.clientCidrs = [...r.clientCIDRs];
    }
    if (r.methods !== undefined) out.methods = [...r.methods];
    if (r.claims !== undefined) out.claims = r.claims.map((c) => ({ name: c.name, values: [...c.values] }));
    if (r.scopes !== undefined) out.scopes = [...r.scopes];
    if (r.headers !== undefined)
      out.headers = r.headers.map((h) =>
        h.value === undefined ? { name: h.name } : { name: h.name, value: h.value },
      );
    return out;
  });
  const externalAuth = policyExternalAuth(policy, lookup, problems);
  const config: AccessPolicyConfig = {
    name: fleetPolicyName('AccessPolicy', ns, policy.metadata.name),
    kind: 'AccessPolicy',
    ...(jwt === undefined || problems.length > 0 ? {} : { jwt }),
    ...(basicAuth === undefined || problems.length > 0 ? {} : { basicAuth }),
    ...(apiKeys === undefined || problems.length > 0 ? {} : { apiKeys }),
    ...(oidc === undefined || problems.length > 0 ? {} : { oidc }),
    rules: problems.length === 0 ? rules : [],
    defaultAction: policy.spec.defaultAction ?? 'Allow',
  };
  if (externalAuth !== undefined && problems.length === 0) config.externalAuth = externalAuth;
  if (problems.length === 0) return { config };
  const problem = problems.join('; ');
  return { config: { ...config, refused: problem }, problem };
}

/**
 * The policy's authorization service as the proxy asks it: the ExternalAuth filter's settings and checks, its
 * timeout and fail-open, and its Service resolved (a ReferenceGrant to the AccessPolicy kind for another
 * namespace's). A problem refuses the whole policy: fail closed.
 */
function policyExternalAuth(
  policy: AccessPolicy,
  lookup: SnapshotLookup,
  problems: string[],
): ExternalAuthorization | undefined {
  const spec = policy.spec.externalAuth;
  if (spec === undefined) return undefined;
  const ns = policy.metadata.namespace ?? '';
  const auth = externalAuthorization(spec, 'spec.externalAuth', ns, problems);
  if (spec.timeout !== undefined) {
    const ms = durationMs(spec.timeout);
    if (ms === undefined || ms < 1 || timeoutProblem(ms) !== undefined)
      problems.push(`spec.externalAuth.timeout: ${timeoutProblem(ms ?? 0) ?? 'must be at least 1ms'}`);
    else auth.timeoutMs = ms;
  }
  auth.failOpen = spec.failOpen === true;
  const found = serviceOf(
    spec.backendRef,
    { group: PORTICO_GROUP, kind: 'AccessPolicy', namespace: ns },
    lookup,
  );
  if ('reason' in found) problems.push(`spec.externalAuth.backendRef: ${found.message}`);
  return auth;
}

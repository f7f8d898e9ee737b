// AccessPolicy (gateway.portico.io/v1alpha1, namespaced): who may pass the Gateways, listeners, routes or rules it
// targets. The mechanisms run in a fixed order (authentication first, then the access rules); see docs/access.md.
import { type Static, Type } from '@sinclair/typebox';
import { Enum, ObjectMetaSchema, Unimplemented } from './common.js';
import { DURATION_PATTERN, ExternalAuthFilterSchema } from './http-route.js';
import {
  CIDR_PATTERN,
  HEADER_NAME_PATTERN,
  PolicyTargetRefsSchema,
  policyTargetErrors,
  SecretRefSchema,
} from './policy-target.js';
import type { FieldError } from './schema-errors.js';

const ACTIONS = ['Allow', 'Deny'] as const;

export const AccessRuleSchema = Type.Object({
  name: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 63,
      pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
      description: 'Names the rule in the access log and metrics (`rule` label); absent: `rule-<index>`.',
    }),
  ),
  action: Enum(ACTIONS, { description: 'What a request the rule matches gets.' }),
  clientCIDRs: Type.Optional(
    Type.Array(Type.String({ minLength: 3, maxLength: 43, pattern: CIDR_PATTERN }), {
      minItems: 1,
      maxItems: 64,
      description: "Matches when the client's address is in one of these prefixes (IPv4 or IPv6).",
    }),
  ),
  methods: Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: 32, pattern: '^[A-Z]+$' }), {
      minItems: 1,
      maxItems: 16,
      description: "Matches when the request's method is one of these.",
    }),
  ),
  headers: Type.Optional(
    Type.Array(
      Type.Object({
        name: Type.String({ minLength: 1, maxLength: 256, pattern: HEADER_NAME_PATTERN }),
        value: Type.Optional(Type.String({ maxLength: 4096 })),
      }),
      {
        minItems: 1,
        maxItems: 16,
        description: 'Matches when every one of these headers is present (with this exact value, when set).',
      },
    ),
  ),
  claims: Type.Optional(
    Type.Array(
      Type.Object({
        name: Type.String({ minLength: 1, maxLength: 256 }),
        values: Type.Array(Type.String({ maxLength: 1024 }), { minItems: 1, maxItems: 16 }),
      }),
      {
        minItems: 1,
        maxItems: 16,
        description:
          "Matches when the request's verified JWT has each claim with one of its values (a list claim: holds one).",
      },
    ),
  ),
  scopes: Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: 256 }), {
      minItems: 1,
      maxItems: 16,
      description: "Matches when the verified JWT's scopes (`scope` or `scp`) hold every one of these.",
    }),
  ),
});
export type AccessRule = Static<typeof AccessRuleSchema>;

/**
 * An authorization service every request the policy covers is sent to first: the fields of the Gateway API
 * ExternalAuth filter (HTTP forward-auth or Envoy ext_authz v3 over gRPC), plus how long to wait and what an
 * unanswered request gets.
 */
export const AccessExternalAuthSchema = Type.Object({
  ...ExternalAuthFilterSchema.properties,
  timeout: Type.Optional(
    Type.String({
      pattern: DURATION_PATTERN,
      description:
        'How long the proxy waits for the service (a Gateway API duration, e.g. `500ms`, `5s`); default 5s.',
    }),
  ),
  failOpen: Type.Optional(
    Type.Boolean({
      description:
        'A service that cannot answer (timeout, no endpoint, an error) lets the request pass when true; refuses it (403) when false, the default.',
    }),
  ),
});
export type AccessExternalAuth = Static<typeof AccessExternalAuthSchema>;
const DNS_LABEL = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';

const ClaimValuesSchema = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 256 }),
  values: Type.Array(Type.String({ maxLength: 1024 }), { minItems: 1, maxItems: 16 }),
});

export const JwtProviderSchema = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 63, pattern: DNS_LABEL }),
  issuer: Type.String({
    minLength: 1,
    maxLength: 2048,
    description: 'The `iss` a token of this provider has.',
  }),
  audiences: Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: 2048 }), {
      maxItems: 16,
      description: "The token's `aud` must hold one of these; absent: not checked.",
    }),
  ),
  jwks: Type.Object(
    {
      secretRef: Type.Optional(
        Type.Object({
          name: Type.String({ minLength: 1, maxLength: 253 }),
          namespace: Type.Optional(Type.String({ minLength: 1, maxLength: 63 })),
        }),
      ),
      remote: Type.Optional(
        Type.Object({
          url: Type.String({ minLength: 1, maxLength: 2048 }),
          cacheDurationSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 86400 })),
        }),
      ),
    },
    {
      description:
        'The public keys: a Secret whose key `jwks.json` holds a JSON Web Key Set (another namespace needs a ReferenceGrant), or a URL the proxies fetch it from (cached `cacheDurationSeconds`, default 300). Exactly one.',
    },
  ),
  claimToHeaders: Type.Optional(
    Type.Array(
      Type.Object({
        claim: Type.String({ minLength: 1, maxLength: 256 }),
        header: Type.String({ minLength: 1, maxLength: 256, pattern: HEADER_NAME_PATTERN }),
      }),
      {
        maxItems: 16,
        description: 'Claims copied to request headers toward the backend (set, or removed when absent).',
      },
    ),
  ),
  requiredClaims: Type.Optional(
    Type.Array(ClaimValuesSchema, {
      maxItems: 16,
      description: 'Each claim must have (or, for a list, hold) one of its values; else 403.',
    }),
  ),
});

export const TokenSourceSchema = Type.Object({
  type: Enum(['Header', 'Cookie', 'QueryParameter'] as const),
  name: Type.String({ minLength: 1, maxLength: 256 }),
  prefix: Type.Optional(
    Type.String({ maxLength: 64, description: 'Header only: cut off before the token (`Bearer `).' }),
  ),
});

/** What an OIDC field left out means (the translator applies them; the CRD's descriptions say them). */
export const OIDC_DEFAULTS = {
  redirectURI: '/oauth2/callback',
  logoutPath: '/logout',
  scopes: ['openid'],
  cookieName: 'portico-session',
  /** Without a refresh token a session lasts this long at most. */
  sessionMs: 8 * 3600 * 1000,
  timeoutMs: 5000,
} as const;

/** A path the proxy answers itself (the OIDC callback, logout): absolute, no query. */
const OWN_PATH = '^/[^?#\\s]*$';

export const OidcSchema = Type.Object(
  {
    issuer: Type.String({
      minLength: 1,
      maxLength: 2048,
      description:
        "The OpenID provider's issuer URL (http or https); its discovery document is `<issuer>/.well-known/openid-configuration`.",
    }),
    clientID: Type.String({ minLength: 1, maxLength: 256 }),
    clientSecretRef: Type.Object(SecretRefSchema.properties, {
      description:
        'The Secret whose key `client-secret` holds the client secret (sent to the token endpoint with HTTP Basic); another namespace needs a ReferenceGrant.',
    }),
    cookieSecretRef: Type.Object(SecretRefSchema.properties, {
      description:
        'The Secret whose key `cookie-secret` holds at least 32 random bytes, base64: the session cookie is encrypted and signed with keys derived from it. Changing it ends every session.',
    }),
    redirectURI: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 2048,
        description:
          "The callback registered with the provider: an absolute http(s) URL, or a path the request's own scheme and host are put before. Default `/oauth2/callback`.",
      }),
    ),
    logoutPath: Type.Optional(
      Type.String({
        maxLength: 1024,
        pattern: OWN_PATH,
        description: 'A request to this path ends the session (default `/logout`).',
      }),
    ),
    postLogoutRedirectURI: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 2048,
        description:
          "Where the client goes after logout, through the provider's end_session_endpoint when it has one.",
      }),
    ),
    scopes: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 256, pattern: '^[!#-\\[\\]-~]+$' }), {
        maxItems: 16,
        description: 'Scopes asked for; `openid` is always asked for. Default `[openid]`.',
      }),
    ),
    cookieName: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        pattern: "^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$",
        description: 'The session cookie (default `portico-session`); the login flow uses `<name>-flow`.',
      }),
    ),
    idTokenHeader: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 256,
        pattern: HEADER_NAME_PATTERN,
        description: 'A header the ID token is sent upstream in; absent: not sent.',
      }),
    ),
    forwardAccessToken: Type.Optional(
      Type.Boolean({
        description: 'Send the access token upstream as `authorization: Bearer …` (default false).',
      }),
    ),
    sessionDuration: Type.Optional(
      Type.String({
        pattern: DURATION_PATTERN,
        description:
          'How long a session lasts without a refresh token (a Gateway API duration; default 8h). Tokens that expire are refreshed when the provider gave a refresh token.',
      }),
    ),
    timeout: Type.Optional(
      Type.String({
        pattern: DURATION_PATTERN,
        description: 'How long the proxy waits for the provider (discovery, token endpoint); default 5s.',
      }),
    ),
  },
  {
    description:
      'Browsers log in with OpenID Connect (authorization code with PKCE): a request without a session is sent to the provider, the callback sets an encrypted session cookie; requests that are not page loads get 401. Tokens go upstream only as configured.',
  },
);
export type Oidc = Static<typeof OidcSchema>;

export const AccessPolicySchema = Type.Object({
  apiVersion: Type.String(),
  kind: Type.Literal('AccessPolicy'),
  metadata: ObjectMetaSchema,
  spec: Type.Object({
    targetRefs: PolicyTargetRefsSchema,
    jwt: Type.Optional(
      Type.Object(
        {
          providers: Type.Array(JwtProviderSchema, { minItems: 1, maxItems: 8 }),
          tokenSources: Type.Optional(
            Type.Array(TokenSourceSchema, {
              minItems: 1,
              maxItems: 4,
              description:
                'Where the token is, first found wins; absent: the authorization header after `Bearer `.',
            }),
          ),
        },
        {
          description:
            'Requests must carry a valid JWT (RS, PS, ES or EdDSA signed; exp required) of one of these providers, chosen by its issuer; else 401.',
        },
      ),
    ),
    basicAuth: Type.Optional(
      Type.Object(
        { secretRef: SecretRefSchema },
        {
          description:
            "Requests must carry a user and password of the Secret's `.htpasswd` (bcrypt or {SHA} lines; another namespace needs a ReferenceGrant); else 401. The authorization header does not reach the backend.",
        },
      ),
    ),
    apiKeys: Type.Optional(
      Type.Object(
        {
          secretRefs: Type.Array(SecretRefSchema, { minItems: 1, maxItems: 8 }),
          source: Type.Optional(
            Type.Object({
              type: Enum(['Header', 'QueryParameter'] as const),
              name: Type.String({ minLength: 1, maxLength: 256 }),
            }),
          ),
        },
        {
          description:
            'Requests must carry one of the keys the Secrets hold (every value is a key), in a header or query parameter (`source`, default header x-api-key); else 401. The key is removed before the backend.',
        },
      ),
    ),
    rules: Type.Optional(
      Type.Array(AccessRuleSchema, {
        maxItems: 64,
        description:
          'Access rules, checked after authentication; the first that matches (every field it sets) decides.',
      }),
    ),
    oidc: Type.Optional(OidcSchema),
    externalAuth: Type.Optional(AccessExternalAuthSchema),
    defaultAction: Type.Optional(
      Enum(ACTIONS, {
        description:
          'What a request no rule matches gets. Required with rules: an allow-list and a deny-list differ only here.',
      }),
    ),
  }),
  status: Unimplemented(),
});
export type AccessPolicy = Static<typeof AccessPolicySchema>;

/** The AccessPolicy CRD's CEL rules, for files and `portico translate` too. */
export function accessPolicyErrors(p: AccessPolicy): FieldError[] {
  const errors = policyTargetErrors(p.spec.targetRefs);
  const rules = p.spec.rules ?? [];
  if (rules.length > 0 && p.spec.defaultAction === undefined)
    errors.push({ path: ['spec', 'defaultAction'], message: 'required when rules are given' });
  errors.push(...jwtErrors(p), ...oidcErrors(p));
  const names = new Map<string, number>();
  rules.forEach((r, i) => {
    if (r.name === undefined) return;
    const first = names.get(r.name);
    if (first !== undefined)
      errors.push({ path: ['spec', 'rules', i, 'name'], message: `duplicates rules[${first}].name` });
    else names.set(r.name, i);
  });
  return errors;
}

function jwtErrors(p: AccessPolicy): FieldError[] {
  const errors: FieldError[] = [];
  const issuers = new Map<string, number>();
  const names = new Map<string, number>();
  (p.spec.jwt?.providers ?? []).forEach((provider, i) => {
    const at = ['spec', 'jwt', 'providers', i];
    const sameIssuer = issuers.get(provider.issuer);
    if (sameIssuer !== undefined)
      errors.push({ path: [...at, 'issuer'], message: `duplicates providers[${sameIssuer}].issuer` });
    else issuers.set(provider.issuer, i);
    const sameName = names.get(provider.name);
    if (sameName !== undefined)
      errors.push({ path: [...at, 'name'], message: `duplicates providers[${sameName}].name` });
    else names.set(provider.name, i);
    if ((provider.jwks.secretRef === undefined) === (provider.jwks.remote === undefined))
      errors.push({ path: [...at, 'jwks'], message: 'must set exactly one of secretRef and remote' });
  });
  (p.spec.jwt?.tokenSources ?? []).forEach((source, i) => {
    if (source.prefix !== undefined && source.type !== 'Header')
      errors.push({ path: ['spec', 'jwt', 'tokenSources', i, 'prefix'], message: 'only for type Header' });
  });
  return errors;
}

/** The callback's path: of an absolute URL, its path; else the value itself. */
export function callbackPath(redirectUri: string): string | undefined {
  if (redirectUri.startsWith('/')) return redirectUri;
  try {
    const url = new URL(redirectUri);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.pathname : undefined;
  } catch {
    return undefined;
  }
}

function oidcErrors(p: AccessPolicy): FieldError[] {
  const oidc = p.spec.oidc;
  if (oidc === undefined) return [];
  const at = ['spec', 'oidc'];
  const errors: FieldError[] = [];
  const redirect = oidc.redirectURI ?? OIDC_DEFAULTS.redirectURI;
  const path = callbackPath(redirect);
  if (path === undefined)
    errors.push({ path: [...at, 'redirectURI'], message: 'must be an absolute http(s) URL or a path' });
  else if (path === (oidc.logoutPath ?? OIDC_DEFAULTS.logoutPath))
    errors.push({ path: [...at, 'logoutPath'], message: "must differ from the redirect URI's path" });
  for (const [field, url] of [
    ['issuer', oidc.issuer],
    ['postLogoutRedirectURI', oidc.postLogoutRedirectURI],
  ] as const) {
    if (url !== undefined && !/^https?:\/\/[^\s]+$/.test(url))
      errors.push({ path: [...at, field], message: 'must be an absolute http or https URL' });
  }
  return errors;
}

// The CRDs of Portico's policy kinds (charts/gateway-helm/crds), generated from the schemas Portico validates with
// (src/api) and the CEL rules below, so the API server and `portico standalone`/`translate` take the same objects
// (test/api/policy-crds.test.ts fails when a committed CRD is not what this writes).
//
//   node --import tsx scripts/policy-crds.ts        # rewrite the policy CRDs
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { TSchema } from '@sinclair/typebox';
import { stringify } from 'yaml';
import { AccessPolicySchema } from '../src/api/access-policy.js';
import { ClientTrafficPolicySchema } from '../src/api/client-traffic-policy.js';
import { RateLimitPolicySchema } from '../src/api/rate-limit-policy.js';

type Json = Record<string, unknown>;

interface PolicyCrd {
  kind: string;
  plural: string;
  shortName: string;
  description: string;
  schema: TSchema;
  /** CEL rules on `spec`, each mirroring a rule of src/api/semantic-rules.ts. */
  specRules: { rule: string; message: string }[];
}

/** No target twice (kind, name and sectionName): `policyTargetErrors`. */
const UNIQUE_TARGETS = {
  rule: 'self.targetRefs.all(a, self.targetRefs.exists_one(b, a.kind == b.kind && a.name == b.name && (has(a.sectionName) ? has(b.sectionName) && a.sectionName == b.sectionName : !has(b.sectionName))))',
  message: 'targetRefs must not name the same target twice',
};

export const POLICY_CRDS: PolicyCrd[] = [
  {
    kind: 'AccessPolicy',
    plural: 'accesspolicies',
    shortName: 'ap',
    description: 'Who may pass the Gateways, listeners, routes or route rules it targets.',
    schema: AccessPolicySchema,
    specRules: [
      UNIQUE_TARGETS,
      {
        rule: '!has(self.rules) || size(self.rules) == 0 || has(self.defaultAction)',
        message: 'defaultAction: required when rules are given',
      },
      {
        rule: '!has(self.rules) || self.rules.all(a, !has(a.name) || self.rules.exists_one(b, has(b.name) && b.name == a.name))',
        message: 'rules must not share a name',
      },
      // The Gateway API ExternalAuth filter's own CEL rules, for the policy's externalAuth.
      {
        rule: "!has(self.externalAuth) || (self.externalAuth.protocol == 'GRPC') == has(self.externalAuth.grpc)",
        message: 'externalAuth.grpc: required when protocol is GRPC, and only then',
      },
      {
        rule: "!has(self.externalAuth) || (self.externalAuth.protocol == 'HTTP') == has(self.externalAuth.http)",
        message: 'externalAuth.http: required when protocol is HTTP, and only then',
      },
      {
        rule: '!has(self.jwt) || self.jwt.providers.all(p, has(p.jwks.secretRef) != has(p.jwks.remote))',
        message: 'jwt.providers[].jwks: must set exactly one of secretRef and remote',
      },
      {
        rule: '!has(self.jwt) || self.jwt.providers.all(a, self.jwt.providers.exists_one(b, a.issuer == b.issuer) && self.jwt.providers.exists_one(b, a.name == b.name))',
        message: 'jwt.providers: issuers and names must be unique',
      },
      {
        rule: '!has(self.jwt) || !has(self.jwt.tokenSources) || self.jwt.tokenSources.all(s, s.type == "Header" || !has(s.prefix))',
        message: 'jwt.tokenSources[].prefix: only for type Header',
      },
      // accessPolicyErrors' OIDC checks (src/api/access-policy.ts).
      {
        rule: "!has(self.oidc) || (self.oidc.issuer.matches('^https?://[^\\\\s]+$') && (!has(self.oidc.postLogoutRedirectURI) || self.oidc.postLogoutRedirectURI.matches('^https?://[^\\\\s]+$')))",
        message: 'oidc.issuer, oidc.postLogoutRedirectURI: must be absolute http or https URLs',
      },
      {
        rule: "!has(self.oidc) || !has(self.oidc.redirectURI) || self.oidc.redirectURI.startsWith('/') || (isURL(self.oidc.redirectURI) && self.oidc.redirectURI.matches('^https?://'))",
        message: 'oidc.redirectURI: must be an absolute http(s) URL or a path',
      },
      {
        rule: "!has(self.oidc) || (has(self.oidc.logoutPath) ? self.oidc.logoutPath : '/logout') != (!has(self.oidc.redirectURI) ? '/oauth2/callback' : self.oidc.redirectURI.startsWith('/') ? self.oidc.redirectURI : isURL(self.oidc.redirectURI) ? url(self.oidc.redirectURI).getEscapedPath() : '')",
        message: "oidc.logoutPath: must differ from the redirect URI's path",
      },
    ],
  },
  {
    kind: 'ClientTrafficPolicy',
    plural: 'clienttrafficpolicies',
    shortName: 'ctp',
    description:
      'How the listeners it targets meet their clients: the real client IP, the PROXY protocol, request and connection limits.',
    schema: ClientTrafficPolicySchema,
    specRules: [
      UNIQUE_TARGETS,
      {
        rule: '!has(self.clientIP) || !has(self.clientIP.trustedHops) || !has(self.clientIP.header)',
        message: 'clientIP: set at most one of trustedHops and header',
      },
      {
        rule: "!self.targetRefs.exists(t, t.kind == 'HTTPRoute' || t.kind == 'GRPCRoute') || (!has(self.clientIP) && !has(self.proxyProtocol) && (!has(self.limits) || (!has(self.limits.maxHeaderBytes) && !has(self.limits.maxHeaders) && !has(self.limits.maxConnections) && !has(self.limits.headerTimeout) && !has(self.limits.idleTimeout))))",
        message: 'a policy targeting a route may set only limits.maxRequestBodyBytes',
      },
    ],
  },
  {
    kind: 'RateLimitPolicy',
    plural: 'ratelimitpolicies',
    shortName: 'rlp',
    description:
      'Requests per period per key on the routes, rules or listeners it targets, per proxy or through Redis.',
    schema: RateLimitPolicySchema,
    specRules: [
      UNIQUE_TARGETS,
      {
        rule: 'self.rules.all(a, self.rules.exists_one(b, b.name == a.name))',
        message: 'rules must not share a name',
      },
      {
        rule: "self.rules.all(r, duration(r.period) >= duration('1s') && duration(r.period) <= duration('24h'))",
        message: 'rules[].period: must be from 1s to 24h',
      },
      {
        rule: "has(self.redis) || self.rules.all(r, !has(r.scope) || r.scope != 'Global')",
        message: 'redis: required when a rule is Global',
      },
      {
        rule: "self.rules.all(r, !has(r.keys) || r.keys.all(k, (k.type == 'Header' || k.type == 'Claim') == has(k.name)))",
        message: 'rules[].keys[].name: required for Header and Claim, and only then',
      },
      {
        rule: "self.rules.all(r, !has(r.keys) || r.keys.all(k, k.type != 'Header' || k.name.matches('^[A-Za-z0-9!#$%&\\'*+.^_`|~-]+$')))",
        message: 'rules[].keys[].name: a Header key names a header',
      },
    ],
  },
];

/** A TypeBox schema as an OpenAPI v3 structural schema: literals as enums, no TypeBox markers. */
export function openApi(schema: TSchema): Json {
  const anyOf = schema.anyOf as TSchema[] | undefined;
  if (anyOf?.every((a) => typeof a.const === 'string'))
    return withCommon(schema, { type: 'string', enum: anyOf.map((a) => a.const as string) });
  if (typeof schema.const === 'string') return withCommon(schema, { type: 'string', enum: [schema.const] });
  const out: Json = { type: schema.type };
  if (schema.type === 'object') {
    if (schema.properties !== undefined) {
      const props = schema.properties as Record<string, TSchema>;
      out.properties = Object.fromEntries(Object.entries(props).map(([k, v]) => [k, openApi(v)]));
      if (Array.isArray(schema.required) && schema.required.length > 0) out.required = schema.required;
    } else if (schema.patternProperties !== undefined) {
      const [value] = Object.values(schema.patternProperties as Record<string, TSchema>);
      out.additionalProperties = openApi(value!);
    } else out['x-kubernetes-preserve-unknown-fields'] = true;
  }
  if (schema.type === 'array') out.items = openApi(schema.items as TSchema);
  if (schema.type === undefined) return { 'x-kubernetes-preserve-unknown-fields': true };
  for (const key of ['minLength', 'maxLength', 'pattern', 'minimum', 'maximum', 'minItems', 'maxItems'])
    if (schema[key] !== undefined) out[key] = schema[key];
  return withCommon(schema, out);
}

function withCommon(schema: TSchema, out: Json): Json {
  if (typeof schema.description === 'string') out.description = schema.description;
  if (schema.default !== undefined) out.default = schema.default;
  return out;
}

export function policyCrd(p: PolicyCrd): Json {
  const root = openApi(p.schema);
  const props = root.properties as Json;
  // The API server owns metadata and apiVersion/kind; status is written by controllers (ancestors, GEP-2648).
  props.metadata = { type: 'object' };
  props.apiVersion = { type: 'string' };
  props.kind = { type: 'string' };
  props.status = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
  (props.spec as Json)['x-kubernetes-validations'] = p.specRules;
  root.required = ['spec'];
  root.description = p.description;
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${p.plural}.gateway.portico.io`,
      labels: { 'app.kubernetes.io/name': 'portico-gateway', 'app.kubernetes.io/part-of': 'portico' },
    },
    spec: {
      group: 'gateway.portico.io',
      scope: 'Namespaced',
      names: {
        kind: p.kind,
        listKind: `${p.kind}List`,
        plural: p.plural,
        singular: p.kind.toLowerCase(),
        shortNames: [p.shortName],
        categories: ['portico'],
      },
      versions: [
        {
          name: 'v1alpha1',
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [{ name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' }],
          schema: { openAPIV3Schema: root },
        },
      ],
    },
  };
}

export function crdFile(p: PolicyCrd): string {
  return fileURLToPath(
    new URL(`../charts/gateway-helm/crds/gateway.portico.io_${p.plural}.yaml`, import.meta.url),
  );
}

export function crdText(p: PolicyCrd): string {
  return `# ${p.kind}: generated by scripts/policy-crds.ts from src/api; do not edit.\n${stringify(policyCrd(p), { lineWidth: 0 })}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const p of POLICY_CRDS) writeFileSync(crdFile(p), crdText(p));
}

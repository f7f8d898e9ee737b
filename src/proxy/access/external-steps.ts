// The external mechanisms as steps of the access pipeline (pipeline.ts): an authorization service (HTTP
// forward-auth or ext_authz over gRPC) and OIDC login. Their decisions (access-check.ts) become step outcomes;
// the rule label names the mechanism, the reason its outcome (never a token or a credential).

import type { ExternalAuthorization } from '../../ir/external-auth.js';
import type { AccessDecision } from './access-check.js';
import { ExternalGrpcAuthorizer } from './external-grpc.js';
import { ExternalHttpAuthorizer, unanswered } from './external-http.js';
import type { OidcAuthenticator } from './oidc.js';
import type { AccessStep, Authorizers, StepOutcome } from './step.js';

export function createAuthorizers(): Authorizers {
  return { http: new ExternalHttpAuthorizer(), grpc: new ExternalGrpcAuthorizer() };
}

export function closeAuthorizers(authorizers: Authorizers): void {
  authorizers.http.close();
  authorizers.grpc.close();
}

/** A mechanism's decision as a step outcome; `rule` names the mechanism (a metrics label). */
export function outcomeOf(decision: AccessDecision, rule: string): StepOutcome {
  if (!decision.allowed) {
    return {
      allow: false,
      status: decision.status,
      headers: decision.lines,
      rule,
      reason: decision.reason,
      ...(decision.body.length === 0 ? {} : { body: decision.body }),
    };
  }
  const pairs = (list: [string, string][]) => list.map(([name, value]) => ({ name, value }));
  return {
    allow: true,
    // A fail-open pass is labelled so: the metrics and the access log tell it from a real allowance.
    rule: decision.failedOpen === undefined ? rule : `${rule}_failed_open`,
    set: pairs(decision.upstream.set),
    add: pairs(decision.upstream.append),
    remove: decision.upstream.remove,
    responseHeaders: decision.responseLines,
  };
}

/** An authorization service's step: asks an endpoint of its cluster, fails as configured when there is none. */
export function externalAuthStep(auth: ExternalAuthorization): AccessStep {
  const rule = auth.protocol === 'GRPC' ? 'ext_authz_grpc' : 'ext_authz_http';
  return {
    bodyBytes: auth.forwardBodyMaxBytes,
    check: async (req, context) => {
      const reach = context.reach;
      const endpoint = reach?.endpointOf(auth.cluster);
      if (reach === undefined || endpoint === undefined) return outcomeOf(unanswered(auth, 'error'), rule);
      const client = auth.protocol === 'GRPC' ? reach.authorizers.grpc : reach.authorizers.http;
      return outcomeOf(await client.check(auth, req, endpoint), rule);
    },
  };
}

/** An OIDC login step: a session passes (tokens upstream as configured), anything else is sent to log in. */
export function oidcStep(authenticator: OidcAuthenticator): AccessStep {
  return { check: async (req) => outcomeOf(await authenticator.check(req), 'oidc') };
}

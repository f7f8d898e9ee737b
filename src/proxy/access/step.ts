// The contract of a check step: what a mechanism (JWT, basic auth, API keys, an authorization service, the access
// rules) implements to join a policy's pipeline (pipeline.ts).
import type { Endpoint, HeaderValue } from '../../ir/fleet-config.js';
import type { ExternalGrpcAuthorizer } from './external-grpc.js';
import type { ExternalHttpAuthorizer } from './external-http.js';
import type { AccessRequest } from './request-view.js';

/** The proxy's clients of authorization services: connections kept per endpoint, shared by every route. */
export interface Authorizers {
  http: ExternalHttpAuthorizer;
  grpc: ExternalGrpcAuthorizer;
}

/** How a step reaches an authorization service: an endpoint of its cluster now, and the clients. */
export interface AuthorizationReach {
  authorizers: Authorizers;
  /** A ready endpoint of the cluster (balanced like a backend's); undefined: none, or no such cluster. */
  endpointOf(cluster: string): Endpoint | undefined;
}

/** What earlier steps established about the request, for later ones (the access rules read claims). */
export interface AccessContext {
  /** A verified token's claims (JWT). */
  claims?: Readonly<Record<string, unknown>>;
  /** The proxy's way to authorization services, for the steps that ask one. */
  reach?: AuthorizationReach;
}

export type StepOutcome =
  | {
      allow: true;
      /** The rule that decided, when a rule did (metrics and the access log). */
      rule?: string;
      set?: HeaderValue[];
      /** Values appended to what the header has (an authorization service's `append`). */
      add?: HeaderValue[];
      remove?: string[];
      /** Header lines (name, value, ...) added to the client's response (a refreshed session cookie). */
      responseHeaders?: string[];
      /** Query parameters taken out of the upstream request's target (a credential). */
      removeQuery?: string[];
    }
  | {
      allow: false;
      /** 401 (no or bad credentials) or 403 (not allowed); no body, no detail. */
      status: number;
      /** Header lines of the refusal (`www-authenticate`). */
      headers?: string[];
      /** The step or rule that refused: a metrics label. */
      rule: string;
      /** Why, for the access log only: never a credential. */
      reason: string;
      /** The refusal's body (an authorization service's own answer, bounded); absent: none. */
      body?: Buffer;
    };

export interface AccessStep {
  check(req: AccessRequest, context: AccessContext): StepOutcome | Promise<StepOutcome>;
  /** Request body bytes the step reads (`req.body`, buffered before the pipeline runs); absent or 0: none. */
  readonly bodyBytes?: number;
}

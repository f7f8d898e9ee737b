// External authorization as the IR carries it: which service decides (a cluster the proxy reaches like any
// backend), how it is asked (HTTP forward-auth or Envoy ext_authz v3 over gRPC) and what happens when it cannot
// answer. Written by the translator (the Gateway API ExternalAuth HTTPRoute filter, Portico's access policy);
// read by the proxy's access checks (src/proxy/access/).

/** Default time the proxy waits for the authorization service before it fails (open or closed). */
export const DEFAULT_EXTERNAL_AUTH_TIMEOUT_MS = 5_000;

/** Largest denial body of an authorization service passed on to the client; a longer one is cut off. */
export const MAX_EXTERNAL_AUTH_DENIAL_BYTES = 64 * 1024;

/** Largest request body buffered to be sent to an authorization service (`forwardBody.maxSize`). */
export const MAX_EXTERNAL_AUTH_BODY_BYTES = 1024 * 1024;

export interface ExternalAuthorization {
  protocol: 'HTTP' | 'GRPC';
  /** The Cluster the authorization service is (its endpoints resolved like any backend's). */
  cluster: string;
  /** Header names (lower case) of the client request sent to the service; empty: gRPC all, HTTP only the always-sent. */
  allowedRequestHeaders: string[];
  /** HTTP only: prefix added to the request path sent to the service (`/auth` + `/app?x=1`). */
  pathPrefix: string;
  /** HTTP only: header names (lower case) of a 2xx answer copied to the upstream request; empty: all but framing and host. */
  allowedResponseHeaders: string[];
  /** Bytes of the request body sent along; 0: none. A larger body is refused with 413. */
  forwardBodyMaxBytes: number;
  timeoutMs: number;
  /** The service cannot be reached or does not answer in time: let the request pass (true) or refuse it (false, default). */
  failOpen: boolean;
}

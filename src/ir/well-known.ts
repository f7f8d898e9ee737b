// The ports and names every part of Portico agrees on. CLI defaults and help texts, the Kubernetes renderer, the
// host supervisor and both providers read them here, so that each is defined once.

/** Ports of the controller, the proxy and the proxy pod's shutdown manager. */
export const PORTS = {
  /** Controller: configuration discovery (gRPC over TLS). */
  discovery: 18000,
  /** Controller: /healthz, /readyz and /dataplane; in standalone mode the admin API. */
  controllerHttp: 18001,
  /** Proxy: admin API (drain, live configuration); always loopback. */
  proxyAdmin: 19000,
  /** Controller and proxy: Prometheus /metrics. */
  metrics: 19001,
  /** Proxy pod: the shutdown manager the kubelet's preStop hook calls. */
  shutdownManager: 19002,
  /** Proxy: readiness for the kubelet. */
  proxyReady: 19003,
} as const;

/** Gateway listener ports below 1024 bind at port + 10000 inside a pod, so the proxy needs no privilege. */
export const PRIVILEGED_PORT_OFFSET = 10000;

/** The controller's Deployment and Service in its namespace (and the discovery host name proxies dial). */
export const CONTROLLER_SERVICE = 'portico-gateway';
/** The server-side apply field manager of every object the controller writes. */
export const FIELD_MANAGER = 'portico-gateway';
/**
 * On Kubernetes, the label that lets Portico read a Secret of any type: the credentials its policies name (JWT keys,
 * htpasswd, API keys, a Redis password). Without it the controller lists only `kubernetes.io/tls` Secrets.
 */
export const CREDENTIALS_LABEL = 'gateway.portico.io/credentials';

/** `app.kubernetes.io/managed-by` on every object Portico creates; nothing without it is ever changed. */
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'portico-gateway';
/** The name in the discovery server's certificate; proxies that dial an IP address verify this name. */
export const DISCOVERY_SERVER_NAME = 'portico-gateway';
/** The ConfigMap with the CA proxies trust for discovery (copied to Gateway namespaces in that mode). */
export const CA_CONFIGMAP = 'portico-ca';

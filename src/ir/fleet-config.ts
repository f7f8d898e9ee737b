// The fleet config: everything one proxy fleet needs, and nothing about how it was derived.
// It is the versioned contract between the controller (translator, discovery server) and the proxy;
// both sides import it from here. Plain JSON-serialisable data only: no classes, no Maps, no undefined
// values that matter (an absent optional field and `undefined` mean the same thing).

/** Bumped on any incompatible change; a proxy refuses (NACKs) a config with another schema version. */
export const FLEET_CONFIG_SCHEMA_VERSION = 2;

/**
 * A fleet's whole configuration as a set of named resources by type. Every list is sorted by `name`,
 * names are unique within their type, and the discovery server diffs fleets resource by resource:
 * one route edit changes one VirtualHost, not the world.
 */
export interface FleetConfig {
  schemaVersion: typeof FLEET_CONFIG_SCHEMA_VERSION;
  /** The fleet key: `<gateway namespace>/<gateway name>`, or `<gatewayclass name>` when merged. */
  fleet: string;
  /** The Gateways this fleet serves with the generation translated, so an ACK proves `Programmed`. */
  gateways: FleetGateway[];
  listeners: Listener[];
  virtualHosts: VirtualHost[];
  clusters: Cluster[];
  endpoints: ClusterEndpoints[];
  secrets: TlsSecret[];
}

export interface FleetGateway {
  /** `<namespace>/<name>` of a Gateway, or `ListenerSet <namespace>/<name>` (listenerSetFleetName) of a ListenerSet. */
  name: string;
  generation: number;
  /**
   * The TlsSecret the proxies present as client certificate to TLS backends (spec.tls.backend.clientCertificateRef);
   * in a merged fleet, the first Gateway's (by name) that names one is used for every backend.
   */
  backendClientCertificate?: string;
}

const LISTENER_SET_PREFIX = 'ListenerSet ';

/**
 * A ListenerSet's name in a fleet's `gateways` (its listeners' `gatewayListeners` too): its generation is applied
 * with the Gateway's, and a name with a space is never a Gateway's `<namespace>/<name>`.
 */
export function listenerSetFleetName(key: string): string {
  return `${LISTENER_SET_PREFIX}${key}`;
}

/** The ListenerSet's `ns/name` a fleet `gateways` name stands for; undefined for a Gateway's name. */
export function listenerSetOfFleetName(name: string): string | undefined {
  return name.startsWith(LISTENER_SET_PREFIX) ? name.slice(LISTENER_SET_PREFIX.length) : undefined;
}

/**
 * HTTP and HTTPS serve VirtualHosts by Host header. TLS, TCP and UDP are layer 4: a TLS listener picks its
 * VirtualHost by the ClientHello's SNI (and `tls.certificates` says, per hostname, whether the proxy ends TLS or
 * passes it through); a TCP or UDP listener has one VirtualHost (its first by name). A layer-4 VirtualHost's first
 * route's Forward action says where a connection or datagram flow goes.
 */
export type ListenerProtocol = 'HTTP' | 'HTTPS' | 'TLS' | 'TCP' | 'UDP';

/** One socket: all Gateway listeners of the fleet on one port share it (the protocol must agree). */
export interface Listener {
  /** `port-<port>` */
  name: string;
  /** The port the Gateway exposes; the proxy binds it on its own address (the address is not config). */
  port: number;
  protocol: ListenerProtocol;
  /** The Gateway listeners merged into this socket, for status and metrics. */
  gatewayListeners: GatewayListenerRef[];
  /** Present exactly when protocol is HTTPS or TLS. */
  tls?: ListenerTls;
}

export interface GatewayListenerRef {
  /** `<namespace>/<gateway name>` */
  gateway: string;
  /** The listener's `name` in the Gateway spec. */
  listener: string;
}

export interface ListenerTls {
  /**
   * Certificates chosen by SNI: the first entry whose hostnames match the server name (exact before
   * wildcard, longest wildcard first) wins; an entry with hostname `*` is the default for any SNI.
   */
  certificates: TlsCertificateChoice[];
}

export interface TlsCertificateChoice {
  /** Exact (`a.example.com`), wildcard (`*.example.com`, one or more labels) or `*` (any). */
  hostnames: string[];
  /** Names of TlsSecrets; the first is served (the rest are alternatives, e.g. other key types). */
  secrets: string[];
  /**
   * TLS listeners only: connections whose SNI picks this entry pass through undecrypted to the backend, which
   * ends TLS itself (`secrets` is then empty). Absent: the proxy ends TLS with `secrets`.
   */
  passthrough?: true;
}

/**
 * Routes for one effective hostname on one port. A request's Host (port ignored) selects exactly one
 * VirtualHost: exact hostname, else the longest matching wildcard suffix, else `*`. No fall-through:
 * when no route of the chosen VirtualHost matches, the answer is 404.
 */
export interface VirtualHost {
  /** `<listener>/<hostname>`, i.e. `port-<port>/<hostname>`. */
  name: string;
  /**
   * The Listener serving it (its name, `port-<port>`). The VirtualHost names its Listener rather than the Listener
   * listing its VirtualHosts, so adding or removing one changes that resource alone, not a list of thousands.
   */
  listener: string;
  /** Exact (`a.example.com`), wildcard (`*.example.com`: one or more labels) or `*` (any host). */
  hostname: string;
  /** Already in Gateway API precedence order: the proxy takes the first route that matches. */
  routes: Route[];
}

export interface Route {
  /**
   * `<route namespace>/<route name>/rule/<i>/match/<j>`, with `GRPCRoute/` before it for a GRPCRoute (so the
   * two kinds never share a name): stable, for metrics and logs.
   */
  name: string;
  /** Which route this came from, for status and metrics; `kind` absent means HTTPRoute. */
  routeRef: { kind?: RouteRefKind; namespace: string; name: string; rule: number };
  match: RouteMatch;
  /** Request filters applied in order before the action (header modifiers, URL rewrite). */
  filters: RouteFilter[];
  action: RouteAction;
}

/** The route kinds besides HTTPRoute (a `routeRef` without `kind`). */
export type RouteRefKind = 'GRPCRoute' | 'TLSRoute' | 'TCPRoute' | 'UDPRoute';

export interface RouteMatch {
  /** Absent: everything (same as PathPrefix `/`). */
  path?: PathMatch;
  /** All must match. Header names are lower case. */
  headers: HeaderMatch[];
  /** All must match. Names are case-sensitive. */
  queryParams: QueryParamMatch[];
  /** Upper case (`GET`); absent: any method. */
  method?: string;
}

export type PathMatch =
  /** The whole path (before `?`) equals value. */
  | { type: 'Exact'; value: string }
  /** Path equals value or continues with `/` after it (whole segments); value has no trailing `/` unless it is `/`. */
  | { type: 'PathPrefix'; value: string }
  /** RE2 regular expression (linear-time), matched against the whole path. */
  | { type: 'RegularExpression'; value: string };

/** RegularExpression values are RE2 syntax, matched against the whole value. */
export interface HeaderMatch {
  type: 'Exact' | 'RegularExpression';
  name: string;
  value: string;
}

export interface QueryParamMatch {
  type: 'Exact' | 'RegularExpression';
  name: string;
  value: string;
}

export type RouteFilter =
  | { type: 'RequestHeaderModifier'; headers: HeaderModifier }
  | { type: 'ResponseHeaderModifier'; headers: HeaderModifier }
  | { type: 'URLRewrite'; hostname?: string; path?: PathModifier }
  /** Route filters only: the proxy answers CORS preflights itself and adds CORS headers to responses. */
  | { type: 'CORS'; cors: CorsPolicy };

/** An HTTPRoute CORS filter (Gateway API `HTTPCORSFilter`), with its defaults applied. */
export interface CorsPolicy {
  /**
   * `*` alone (any origin), or `http(s)://<host>[:<port>]` in lower case, where host may be `*` (any) or start
   * with `*.` (one or more labels); without a port the scheme's default (80, 443) is meant. Empty: none allowed.
   */
  allowOrigins: string[];
  /** Methods (`GET`), or `*` alone. Empty: no `access-control-allow-methods`. */
  allowMethods: string[];
  /** Header names as configured, or `*` alone. */
  allowHeaders: string[];
  /** Header names as configured, or `*` alone. */
  exposeHeaders: string[];
  /** `access-control-max-age`, seconds (the Gateway API default is 5). */
  maxAgeSeconds: number;
  allowCredentials: boolean;
}

export interface HeaderModifier {
  /** Replace (or add) these headers. Names lower case. */
  set: HeaderValue[];
  /** Append these values. Names lower case. */
  add: HeaderValue[];
  /** Remove these headers. Names lower case. */
  remove: string[];
}

export interface HeaderValue {
  name: string;
  value: string;
}

export type PathModifier =
  | { type: 'ReplaceFullPath'; value: string }
  /** Replaces the matched PathPrefix (the route's `match.path.value`) with value, segment-aware. */
  | { type: 'ReplacePrefixMatch'; value: string };

export type RouteAction = ForwardAction | RedirectAction | DirectResponseAction;

export interface ForwardAction {
  type: 'Forward';
  /** Picked by weight (0 = never). An entry without `cluster` is an invalid backendRef: its share gets 500. */
  backends: WeightedBackend[];
  /** HTTPRoute `timeouts.request`; default 15000; 0 = no timeout. Sent upstream as `x-portico-expected-rq-timeout-ms`. */
  timeoutMs: number;
  /** HTTPRoute `timeouts.backendRequest`, per upstream attempt; absent or 0: bounded only by timeoutMs. */
  backendTimeoutMs?: number;
  /** HTTPRoute `retry`: absent, no retries but the proxy's own (a stale pooled connection). */
  retry?: RetryPolicy;
}

/** When a forwarded request is sent again (HTTPRoute `retry`, GEP-1731), always within `timeoutMs`. */
export interface RetryPolicy {
  /** Response statuses that are retried; connection failures (refused, reset, no response) always are. */
  codes: number[];
  /** Retries after the first attempt; 0 disables them. */
  attempts: number;
  /** The wait before a first retry, doubling with each further one (jittered, up to ten times it). */
  backoffMs: number;
}

export interface WeightedBackend {
  weight: number;
  /** A Cluster name; absent when the backendRef is invalid (missing Service, not permitted, wrong kind). */
  cluster?: string;
  /** Filters of this backendRef only, applied after the route's filters. */
  filters: RouteFilter[];
}

export interface RedirectAction {
  type: 'Redirect';
  /** Absent: keep the request's scheme. */
  scheme?: 'http' | 'https';
  /** Absent: keep the request's host (without its port). */
  hostname?: string;
  /** Absent: keep the request's path. */
  path?: PathModifier;
  /** Absent: derived from the scheme as the Gateway API specifies (well-known port omitted). */
  port?: number;
  statusCode: 301 | 302 | 303 | 307 | 308;
}

export interface DirectResponseAction {
  type: 'DirectResponse';
  /** 500 for a rule with no valid backend at all (e.g. no backendRefs). */
  status: number;
}

/** `tcp` and `udp`: layer-4 clusters, whose bytes or datagrams the proxy relays as they come. */
export type ClusterProtocol = 'http' | 'h2c' | 'tcp' | 'udp';

/** An upstream: one Service port. */
export interface Cluster {
  /**
   * `<namespace>/<service name>:<port>`; with `/<protocol>` after it when the routes using it speak another
   * protocol than the port's appProtocol says (a GRPCRoute to a port without `kubernetes.io/h2c`).
   */
  name: string;
  service: { namespace: string; name: string; port: number };
  /**
   * Upstream protocol: `http` is HTTP/1.1 over TCP (WebSocket upgrades included); `h2c` is HTTP/2 with
   * prior knowledge over TCP (Service port `appProtocol: kubernetes.io/h2c`, and every GRPCRoute backend); `tcp`
   * (TLSRoute and TCPRoute backends) and `udp` (UDPRoute) relay a connection or datagrams unchanged.
   */
  protocol: ClusterProtocol;
  /**
   * Present when a BackendTLSPolicy applies to the Service port: the proxy speaks TLS to it, never plaintext. A
   * `tcp` cluster uses it for connections whose TLS the proxy ended; a passed-through connection's TLS is the
   * client's own, relayed as it is.
   */
  tls?: ClusterTls;
}

/** How the proxy originates TLS to a cluster's endpoints (BackendTLSPolicy). */
export interface ClusterTls {
  /** The policy, `<namespace>/<name>`, for logs and the config dump. */
  policy: string;
  /** Sent as SNI; the name the certificate must carry unless `subjectAltNames` are given. */
  serverName: string;
  /** PEM CA bundle the chain must lead to; absent: the runtime's well-known CAs (`wellKnownCACertificates: System`). */
  caPem?: string;
  /** When not empty, the certificate must carry one of these (and `serverName` is not checked). */
  subjectAltNames: SubjectAltName[];
  /** Set when the policy cannot be honoured (its CA is unresolved): every connection fails, none is plaintext. */
  refused?: string;
}

export interface SubjectAltName {
  type: 'Hostname' | 'URI';
  value: string;
}

/** The ready endpoints of one Cluster, resolved through EndpointSlices. */
export interface ClusterEndpoints {
  /** The Cluster's name. */
  name: string;
  /** Sorted by address then port. Empty: the Service exists but has no ready endpoint (503). */
  endpoints: Endpoint[];
}

export interface Endpoint {
  address: string;
  port: number;
}

/** A TLS certificate chain and key, from a `kubernetes.io/tls` Secret. Never logged or dumped in full. */
export interface TlsSecret {
  /** `<namespace>/<secret name>` */
  name: string;
  certificatePem: string;
  privateKeyPem: string;
}

/** The resource types of a FleetConfig that discovery sends by name, in dependency order. */
export const FLEET_RESOURCE_TYPES = [
  'gateways',
  'secrets',
  'clusters',
  'endpoints',
  'virtualHosts',
  'listeners',
] as const;
export type FleetResourceType = (typeof FLEET_RESOURCE_TYPES)[number];

export function isFleetResourceType(type: string): type is FleetResourceType {
  return (FLEET_RESOURCE_TYPES as readonly string[]).includes(type);
}

/** Default route timeout when an HTTPRoute sets none (Gateway API leaves it to the implementation). */
export const DEFAULT_ROUTE_TIMEOUT_MS = 15_000;

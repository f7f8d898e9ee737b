// The fleet config: everything one proxy fleet needs, and nothing about how it was derived.
// It is the versioned contract between the controller (translator, discovery server) and the proxy;
// both sides import it from here. Plain JSON-serialisable data only: no classes, no Maps, no undefined
// values that matter (an absent optional field and `undefined` mean the same thing).
import type { ExternalAuthorization } from './external-auth.js';
import type { OidcAuthentication } from './oidc.js';

/** Bumped on any incompatible change; a proxy refuses (NACKs) a config with another schema version. */
export const FLEET_CONFIG_SCHEMA_VERSION = 3;

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
  /** Portico policies (AccessPolicy, …) that Routes and VirtualHosts name; each listed once, however many use it. */
  policies: FleetPolicy[];
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
  /** Who the client is behind load balancers and CDNs; absent: the peer address, and its headers are not believed. */
  clientIp?: ClientIpPolicy;
  /** Request and connection limits of this socket; an absent field keeps the proxy's built-in default. */
  limits?: ListenerLimits;
  /** Connections start with a PROXY protocol header (v1 or v2) naming the client; absent: none is accepted. */
  proxyProtocol?: ProxyProtocolPolicy;
}

/** Who may send a PROXY protocol header, and how long it may take. */
export interface ProxyProtocolPolicy {
  /** Peers allowed to connect at all: every connection must come from one and start with the header. */
  trustedCidrs: string[];
  /** The whole header must arrive within this. */
  timeoutMs: number;
}

/**
 * How the real client address is found (Portico's ClientTrafficPolicy settings). The forwarding headers of a peer
 * outside `trustedCidrs` are never believed: its own address is the client.
 */
export interface ClientIpPolicy {
  /** Peers (and, walking `x-forwarded-for` from the right, hops) trusted to report the client: CIDRs. */
  trustedCidrs: string[];
  /**
   * The client is this many entries from the right of `x-forwarded-for` (1: the entry the trusted peer appended);
   * absent: the rightmost entry not in `trustedCidrs`. Fewer entries than this: the peer is the client.
   */
  trustedHops?: number;
  /** A header a trusted peer sets to the client's address (a CDN's), read instead of `x-forwarded-for`. */
  header?: string;
}

/** Request and connection limits of a listener (defaults: the proxy's built-in limits, docs/configuration.md). */
export interface ListenerLimits {
  /** Largest request body in bytes; larger gets 413 (checked on content-length and while the body streams). */
  maxRequestBodyBytes?: number;
  /** Largest request head in bytes (HTTP/1.1 request line and headers; HTTP/2 header list); larger gets 431. */
  maxHeaderBytes?: number;
  /** Most request headers; more gets 431. */
  maxHeaders?: number;
  /** Connections open at once on this listener (HTTP, HTTPS, TLS, TCP), per worker; more are closed at accept. */
  maxConnections?: number;
  /** UDP listeners: client flows at once, per worker; a new client past it is dropped (counted as refused). */
  maxUdpFlows?: number;
  /** UDP listeners: a flow with no datagram either way for this long ends. */
  udpFlowIdleTimeoutMs?: number;
  /** TLS listeners: the largest ClientHello read for its server name; a larger one closes the connection. */
  clientHelloMaxBytes?: number;
  /** HTTPS and TLS listeners: the TLS handshake (and on TLS, the ClientHello before it) must finish within this. */
  tlsHandshakeTimeoutMs?: number;
  /** The whole request head must arrive within this. */
  headerTimeoutMs?: number;
  /** An idle keep-alive connection is closed after this. */
  idleTimeoutMs?: number;
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
  /** Present when the Gateway asks for client certificates on this port (`spec.tls.frontend`). */
  clientValidation?: ClientValidation;
}

/**
 * How the proxy checks client certificates in the TLS handshake, before any request is read: `AllowValidOnly`
 * refuses a client without a certificate that leads to `caPem`; `AllowInsecureFallback` asks for one and lets
 * every client in.
 */
export interface ClientValidation {
  /** PEM CA certificates the client's chain must lead to. */
  caPem: string;
  mode: 'AllowValidOnly' | 'AllowInsecureFallback';
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
  /**
   * The policies (names in `policies`, at most one per kind) of the Gateway listener owning this VirtualHost: its
   * own, else its ListenerSet's, else its Gateway's. A Route's policy of the same kind replaces it whole.
   */
  policies?: string[];
  /**
   * The owning Gateway listener's pre-routing filters (`filters.requests`, GEP-5224), run in this order on every
   * request before route matching; what they add to the request is what the routes match.
   */
  requestFilters?: ListenerRequestFilter[];
}

/** A listener's pre-routing filter: an authorization service asked before any route is chosen. */
export interface ListenerRequestFilter {
  type: 'ExternalAuth';
  auth: ExternalAuthorization;
  /** Set when the filter cannot be honoured (its service is missing or not granted): it refuses every request. */
  refused?: string;
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
  /** A body larger than this (bytes) gets 413; absent: the listener's limit. */
  maxRequestBodyBytes?: number;
  /** Rate limits checked before the action, in order; the first rule out of tokens answers 429. */
  rateLimits?: RateLimitRule[];
  /** The policies (names in `policies`, at most one per kind) of its rule, else of its route. */
  policies?: string[];
}

/** One rate limit rule of a policy (Portico RateLimitPolicy): `limit` requests per `periodSeconds` per key. */
export interface RateLimitRule {
  /** `<policy namespace>/<policy name>/<rule name>`: metrics, logs and the bucket's identity. */
  name: string;
  /** What one bucket counts; several parts combine (one bucket per distinct tuple). Empty: one bucket for all. */
  keys: RateLimitKey[];
  limit: number;
  periodSeconds: number;
  /** Local: per proxy (all its workers); Global: every proxy sharing the Redis of `redis`. */
  scope: 'Local' | 'Global';
  /** Required when scope is Global: the Redis the fleet's proxies count in. */
  redis?: RedisConnection;
}

/** A Redis server shared by a fleet's proxies for global rate limits. */
export interface RedisConnection {
  /** `host:port`. */
  address: string;
  /** AUTH password (from a Secret); never logged or dumped. */
  password?: string;
  /** Speak TLS; `caPem` absent: the runtime's well-known CAs. */
  tls?: { caPem?: string; serverName?: string };
  /** Redis slow or down: Open lets requests through (default), Closed refuses them with 429. */
  failureMode: 'Open' | 'Closed';
  /** A lease Redis does not answer within this counts as a failure. */
  timeoutMs: number;
}

export type RateLimitKey =
  | { type: 'ClientIp' }
  | { type: 'Header'; name: string }
  | { type: 'Path' }
  /** A claim of the request's verified JWT (the authentication policy's; no token: the key part is empty). */
  | { type: 'Claim'; name: string };

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
  | { type: 'CORS'; cors: CorsPolicy }
  /** Route filters only (Gateway API v1.7 experimental): an authorization service decides before the backend. */
  | { type: 'ExternalAuth'; auth: ExternalAuthorization };

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
  /** RequestMirror filters: copies of the request whose answers are thrown away. Absent: none. */
  mirrors?: RequestMirror[];
}

/**
 * Where a copy of a forwarded request goes (one endpoint of the cluster), after the route's request filters,
 * before its backend's. Only a body the proxy holds whole (within its body buffer) is mirrored.
 */
export interface RequestMirror {
  cluster: string;
  /** The share of requests mirrored, in (0, 1]; 1: every one. */
  fraction: number;
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

/** A Portico policy's effect on requests; `kind` says which (one member per policy kind). */
export type FleetPolicy = AccessPolicyConfig;
export type FleetPolicyKind = FleetPolicy['kind'];

/** `<kind> <namespace>/<name>`: the name Routes and VirtualHosts refer to a policy by. */
export function fleetPolicyName(kind: string, namespace: string, name: string): string {
  return `${kind} ${namespace}/${name}`;
}

/**
 * An AccessPolicy: who may pass. The proxy runs its checks in order (authentication mechanisms, then the access
 * rules); the first refusal answers. Never holds a secret in clear where a digest serves (see its mechanisms).
 */
export interface AccessPolicyConfig {
  /** `AccessPolicy <namespace>/<name>` */
  name: string;
  kind: 'AccessPolicy';
  /** Set when the policy cannot be honoured (a reference it needs is missing): it refuses every request. */
  refused?: string;
  /** Present: a request must carry a valid JWT of one of its providers (checked before the rules). */
  jwt?: JwtConfig;
  /** Present: a request must carry a user and password of these (checked after the JWT). */
  basicAuth?: { users: BasicAuthUser[] };
  /** Present: a request must carry one of these API keys (checked after basic auth); removed before the backend. */
  apiKeys?: ApiKeysConfig;
  /** First match wins; no match: `defaultAction`. */
  rules: AccessRuleConfig[];
  /** Present: a browser logs in with OpenID Connect (checked after the API keys, before the service). */
  oidc?: OidcAuthentication;
  /** An authorization service asked before the access rules (HTTP forward-auth or ext_authz over gRPC). */
  externalAuth?: ExternalAuthorization;
  defaultAction: 'Allow' | 'Deny';
}

export interface BasicAuthUser {
  user: string;
  /** An htpasswd hash: bcrypt (`$2a$`, `$2b$`, `$2y$`) or `{SHA}` base64 SHA-1. Redacted wherever shown. */
  credentialDigest: string;
}

export interface ApiKeysConfig {
  source: { type: 'Header' | 'QueryParameter'; name: string };
  /** SHA-256 (hex) of each key: the proxy compares digests in constant time, and holds no key. Redacted. */
  credentialDigests: string[];
}

export interface JwtConfig {
  /** The token is the first one found, in this order. */
  sources: TokenSource[];
  /** A longer token is refused unread. */
  maxTokenBytes: number;
  /** By issuer (unique). */
  providers: JwtProviderConfig[];
}

export type TokenSource =
  /** `prefix` (case-insensitive, e.g. `Bearer `) is cut off; a value without it is no token. */
  | { type: 'Header'; name: string; prefix?: string }
  | { type: 'Cookie'; name: string }
  | { type: 'QueryParameter'; name: string };

export interface JwtProviderConfig {
  name: string;
  /** The `iss` claim the token must have. */
  issuer: string;
  /** The token's `aud` must hold one of these; empty: not checked. */
  audiences: string[];
  /** A JSON Web Key Set (public keys only), from a Secret; exactly one of `keys` and `remote`. */
  keys?: string;
  /** A key set the proxy fetches and caches. */
  remote?: { url: string; cacheSeconds: number };
  /** Claims copied to upstream request headers (a header whose claim is absent is removed). */
  claimHeaders: { claim: string; header: string }[];
  /** Each claim must have (or, for a list, hold) one of its values. */
  requiredClaims: { name: string; values: string[] }[];
}

export interface AccessRuleConfig {
  /** The rule's name, or `rule-<index>`: a metrics label and in the access log. */
  name: string;
  action: 'Allow' | 'Deny';
  /** Absent: any client. `address/prefix`, IPv4 or IPv6. */
  clientCidrs?: string[];
  /** Absent: any method. Upper case. */
  methods?: string[];
  /** Every one present (with this exact value, when set). Names lower case. */
  headers?: { name: string; value?: string }[];
  /** Every claim of the verified JWT has (or, for a list, holds) one of its values; no JWT: no match. */
  claims?: { name: string; values: string[] }[];
  /** The verified JWT's scopes (`scope`, space-separated, or `scp`) hold every one of these; no JWT: no match. */
  scopes?: string[];
}

/** The resource types of a FleetConfig that discovery sends by name, in dependency order. */
export const FLEET_RESOURCE_TYPES = [
  'gateways',
  'secrets',
  'clusters',
  'endpoints',
  'policies',
  'virtualHosts',
  'listeners',
] as const;
export type FleetResourceType = (typeof FLEET_RESOURCE_TYPES)[number];

export function isFleetResourceType(type: string): type is FleetResourceType {
  return (FLEET_RESOURCE_TYPES as readonly string[]).includes(type);
}

/** Default route timeout when an HTTPRoute sets none (Gateway API leaves it to the implementation). */
export const DEFAULT_ROUTE_TIMEOUT_MS = 15_000;

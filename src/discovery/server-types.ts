// The discovery server's public shapes: who a peer is, how it is authenticated, the options, and what the
// server reports about each connected proxy.

import type { status } from '@grpc/grpc-js';
import type { FleetConfig } from '../ir/fleet-config.js';
import type { FleetConfigChange } from '../ir/fleet-config-patch.js';
import type { Logger } from '../platform/log-line.js';
import type { RateLimit } from '../platform/token-bucket.js';
import type { StageTrace } from '../trace/propagation-trace.js';
import type { CertificatePins } from './certificate-pins.js';

export interface Identity {
  username: string;
  groups: string[];
  extra: Record<string, string[]>;
  /** When the credential stops being valid (ms since the epoch); the stream is closed then. */
  expiresAt?: number;
  /** Mutual TLS: the SHA-256 fingerprint of the client certificate presented (`AB:CD:…`). */
  certificateFingerprint?: string;
}

/**
 * `mtls`: the client certificate (from the CA) names one fleet, and receives only that fleet's config; with
 * `certificates`, only while it is the certificate the table holds for that fleet (the Secret's, see
 * certificate-pins.ts).
 * `token`: a bearer token, authenticated and then authorized by the caller's functions.
 */
export type DiscoveryAuth =
  | { mode: 'mtls'; certificates?: CertificatePins }
  | {
      mode: 'token';
      /** Resolves the bearer token to an identity; rejects when it is not valid (the message is shown to the peer). */
      authenticate(token: string): Promise<Identity>;
      authorize(identity: Identity, request: { fleet: string; node: string }): boolean | Promise<boolean>;
    };

export interface DiscoveryServerOptions {
  /** `host:port`; port 0 lets the OS choose. */
  address: string;
  tls: { caPem: string; certPem: string; keyPem: string };
  auth: DiscoveryAuth;
  log?: Logger;
  /** A stream that names no node and fleet within this time is closed; a connection without an authorized
   * stream too. Default 10000. */
  helloTimeoutMs?: number;
  /** A TLS handshake must finish within this. Default 5000. */
  handshakeTimeoutMs?: number;
  /** Connections without an authorized stream yet (handshaking, or waiting for a hello), at most. Default 512. */
  maxUnauthorizedConnections?: number;
  /** Of those, from one non-loopback source address at most, so a few pods cannot lock out the proxies. Default 8. */
  maxUnauthorizedPerAddress?: number;
  /** Hold loopback sources to the per-address cap too. Default false: standalone, every proxy is loopback. */
  capLoopbackSources?: boolean;
  /** Streams open at once on one connection (a proxy needs one). Default 8. */
  maxStreamsPerConnection?: number;
  /** Token mode: how long a token review stands, and how many are kept. Default 120 s, 4096. */
  tokenReviewCache?: { ttlMs: number; maxEntries: number };
  /** Token mode: reviews one connection may cause (cached answers are free). Default 4, then 1 a minute. */
  reviewRate?: RateLimit;
  /** Acks and Nacks one stream may have handled; beyond it only the latest waits. Default 16, then 4/s. */
  reportRate?: RateLimit;
  /** Told when a fleet's new config is diffed (diagnostics: `--trace-events`). */
  trace?: StageTrace;
}

export interface NodeState {
  /** Unique per stream: a node that reconnects before its old stream is gone appears twice, briefly. */
  stream: number;
  node: string;
  fleet: string;
  /** ISO 8601. */
  connectedAt: string;
  appliedVersion?: string;
  /** `<namespace>/<name>` → generation, of the config the node last applied. */
  appliedGateways: Record<string, number>;
  /** The last Nack's error (with its version), cleared by the next Ack. */
  lastError?: string;
  listenerErrors: { listener: string; message: string }[];
}

export interface DiscoveryServer {
  start(): Promise<{ port: number }>;
  close(): Promise<void>;
  /** `change`: how `config` differs from the fleet's last config, when its producer knows (then only that is looked at). */
  setFleet(config: FleetConfig, change?: FleetConfigChange): void;
  removeFleet(fleet: string): void;
  nodes(): NodeState[];
  /** Fired on connect, disconnect, and an Ack or Nack that changes what the node reports. */
  on(event: 'change', listener: () => void): void;
  off(event: 'change', listener: () => void): void;
}

export const SERVER_DEFAULTS = {
  helloTimeoutMs: 10_000,
  handshakeTimeoutMs: 5_000,
  maxUnauthorizedConnections: 512,
  maxUnauthorizedPerAddress: 8,
  maxStreamsPerConnection: 8,
  tokenReviewCache: { ttlMs: 120_000, maxEntries: 4096 },
  reviewRate: { burst: 4, perSecond: 1 / 60 },
  reportRate: { burst: 16, perSecond: 4 },
} as const;

/** Why a stream is refused: the gRPC status it ends with and what it tells the proxy. */
export interface Refusal {
  code: status;
  details: string;
}

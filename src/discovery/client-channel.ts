// The discovery client's channels: TLS 1.3 to the server with the CA and client certificate read anew for each
// new channel (rotated certificate files are picked up), and reconnect and keepalive timings that notice a
// restarted or silently dead controller quickly.
import { Client } from '@grpc/grpc-js';
import type { Backoff } from './backoff.js';
import type { DiscoveryLog } from './log.js';
import { serverIdentity } from './server-identity.js';
import { createTls13ChannelCredentials } from './tls.js';

export interface ClientTls {
  caPem: string;
  certPem?: string;
  keyPem?: string;
}

export interface ChannelOptions {
  address: string;
  /** serverName: the name to verify in the server certificate; default the host of `address`. */
  tls: ClientTls & { serverName?: string };
  reloadTls?: () => ClientTls;
  backoff: Backoff;
  log: DiscoveryLog;
}

/** A function that opens a new channel, with the certificates as they are now. */
export function channelFactory(options: ChannelOptions): () => Client {
  const identity = serverIdentity(options.address, options.tls.serverName);
  const currentTls = (): ClientTls => {
    if (options.reloadTls === undefined) return options.tls;
    try {
      return { ...options.tls, ...options.reloadTls() };
    } catch (error) {
      options.log(
        'warn',
        `discovery: cannot read the certificates again, using those read at start: ${(error as Error).message}`,
      );
      return options.tls;
    }
  };
  return () =>
    new Client(options.address, createTls13ChannelCredentials(currentTls(), identity.verify), {
      ...identity.channelOptions,
      // The channel's own reconnect backoff must not outlast ours, or a restarted server is noticed late.
      'grpc.initial_reconnect_backoff_ms': options.backoff.initialMs,
      'grpc.max_reconnect_backoff_ms': options.backoff.maxMs,
      'grpc.max_receive_message_length': -1,
      // Notice a silently dead controller connection, so reconnecting starts.
      'grpc.keepalive_time_ms': 30_000,
      'grpc.keepalive_timeout_ms': 10_000,
    });
}

// The discovery client's channels: TLS 1.3 to the server with the CA and client certificate as they are on disk
// now (rotated certificate files are picked up), and reconnect and keepalive timings that notice a restarted or
// silently dead controller quickly.
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { Client } from '@grpc/grpc-js';
import { PorticoError } from '../platform/errors.js';
import type { Logger } from '../platform/log-line.js';
import type { Backoff } from './backoff.js';
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
  log: Logger;
}

export interface ChannelSource {
  /** The certificates as they are now: read again, or the last good ones when a read fails or is half-done. */
  currentTls(): ClientTls;
  open(tls: ClientTls): Client;
}

export function channelSource(options: ChannelOptions): ChannelSource {
  const identity = serverIdentity(options.address, options.tls.serverName);
  let lastGood: ClientTls = options.tls;
  return {
    currentTls() {
      if (options.reloadTls === undefined) return lastGood;
      try {
        const read = { ...options.tls, ...options.reloadTls() };
        checkPair(read);
        lastGood = read;
      } catch (error) {
        options.log.warn(
          `discovery: cannot read the certificates again, using the last ones read: ${(error as Error).message}`,
        );
      }
      return lastGood;
    },
    open: (tls) =>
      new Client(options.address, createTls13ChannelCredentials(tls, identity.verify), {
        ...identity.channelOptions,
        // The channel's own reconnect backoff must not outlast ours, or a restarted server is noticed late.
        'grpc.initial_reconnect_backoff_ms': options.backoff.initialMs,
        'grpc.max_reconnect_backoff_ms': options.backoff.maxMs,
        'grpc.max_receive_message_length': -1,
        // Notice a silently dead controller connection, so reconnecting starts.
        'grpc.keepalive_time_ms': 30_000,
        'grpc.keepalive_timeout_ms': 10_000,
      }),
  };
}

export function sameTls(a: ClientTls, b: ClientTls): boolean {
  return a.caPem === b.caPem && a.certPem === b.certPem && a.keyPem === b.keyPem;
}

/** A certificate and key read while their files are being replaced may not belong together: not usable yet. */
function checkPair(tls: ClientTls): void {
  if (tls.certPem === undefined || tls.keyPem === undefined) return;
  const cert = new X509Certificate(tls.certPem);
  if (!cert.checkPrivateKey(createPrivateKey(tls.keyPem))) {
    throw new PorticoError(
      'E_CERTIFICATE',
      'the client certificate and key do not match (the files are being replaced?)',
    );
  }
}

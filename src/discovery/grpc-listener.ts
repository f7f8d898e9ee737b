// The discovery port: our TLS front (deadlines and caps gRPC does not offer) hands each secured socket to a
// gRPC server speaking HTTP/2 on it, which serves the one bidirectional Stream method.
import { type handleBidiStreamingCall, Server, ServerCredentials } from '@grpc/grpc-js';
import type { Logger } from '../platform/log-line.js';
import { type ClientMessage, discoveryService, type ServerMessage } from './protocol.js';
import { type DiscoveryServerOptions, SERVER_DEFAULTS } from './server-types.js';
import { createTlsFront, type TlsFront } from './tls-front.js';

export interface GrpcListener {
  port: number;
  front: TlsFront;
  /** Stops accepting, closes the front's sockets, and shuts gRPC down (forcibly after a grace). */
  close(): Promise<void>;
}

const SHUTDOWN_GRACE_MS = 2_000;
const MAX_CLIENT_MESSAGE_BYTES = 1024 * 1024;

export async function listenGrpc(
  options: DiscoveryServerOptions,
  handle: handleBidiStreamingCall<ClientMessage, ServerMessage>,
  log: Logger,
): Promise<GrpcListener> {
  const handshakeTimeoutMs = options.handshakeTimeoutMs ?? SERVER_DEFAULTS.handshakeTimeoutMs;
  const grpcServer = new Server({
    'grpc.keepalive_time_ms': 30_000,
    'grpc.keepalive_timeout_ms': 10_000,
    'grpc.max_send_message_length': -1,
    'grpc.max_concurrent_streams': options.maxStreamsPerConnection ?? SERVER_DEFAULTS.maxStreamsPerConnection,
    // A proxy sends a hello, Acks and Nacks: small messages; a larger one is refused before it is decoded.
    'grpc.max_receive_message_length': MAX_CLIENT_MESSAGE_BYTES,
  });
  grpcServer.addService(discoveryService(), { Stream: handle });
  const injector = grpcServer.createConnectionInjector(ServerCredentials.createInsecure());
  const front = createTlsFront({
    address: options.address,
    tls: options.tls,
    requireClientCertificate: options.auth.mode === 'mtls',
    handshakeTimeoutMs,
    // Past the stream's own hello deadline, which says more to a slow proxy than a closed connection.
    authorizeWithinMs: (options.helloTimeoutMs ?? SERVER_DEFAULTS.helloTimeoutMs) + handshakeTimeoutMs,
    maxUnauthorizedConnections:
      options.maxUnauthorizedConnections ?? SERVER_DEFAULTS.maxUnauthorizedConnections,
    maxUnauthorizedPerAddress: options.maxUnauthorizedPerAddress ?? SERVER_DEFAULTS.maxUnauthorizedPerAddress,
    capLoopbackSources: options.capLoopbackSources ?? false,
    reviewRate: options.reviewRate ?? SERVER_DEFAULTS.reviewRate,
    onSecureConnection: (socket) => injector.injectConnection(socket),
    log,
  });
  let port: number;
  try {
    port = await front.listen();
  } catch (error) {
    grpcServer.forceShutdown();
    throw error;
  }
  return { port, front, close: () => shutDown(grpcServer, front) };
}

async function shutDown(grpcServer: Server, front: TlsFront): Promise<void> {
  front.close();
  await new Promise<void>((resolve) => {
    const force = setTimeout(() => {
      grpcServer.forceShutdown();
      resolve();
    }, SHUTDOWN_GRACE_MS);
    grpcServer.tryShutdown(() => {
      clearTimeout(force);
      resolve();
    });
  });
}

// The discovery server: streams each proxy its fleet's config as named resources (everything on connect,
// then only what changed) over TLS 1.3 gRPC, and records what every proxy applied (Ack) or rejected (Nack).
// This file is wiring: streams (server-streams.ts) are admitted by stream-handler.ts with stream-auth.ts,
// follow their fleet in fleet-subscriptions.ts and report in stream-reports.ts; grpc-listener.ts serves them.
import { EventEmitter } from 'node:events';
import { status } from '@grpc/grpc-js';
import { PorticoError } from '../platform/errors.js';
import { discardingLogger, type Logger } from '../platform/log-line.js';
import { enforceCertificatePins } from './certificate-enforcement.js';
import { checkFleetConfig } from './fleet-config-check.js';
import { createFleetSubscriptions } from './fleet-subscriptions.js';
import { type GrpcListener, listenGrpc } from './grpc-listener.js';
import { createStreamSet, describeStream } from './server-streams.js';
import { type DiscoveryServer, type DiscoveryServerOptions, SERVER_DEFAULTS } from './server-types.js';
import { createStreamAuth } from './stream-auth.js';
import { createStreamHandler } from './stream-handler.js';

export type {
  DiscoveryAuth,
  DiscoveryServer,
  DiscoveryServerOptions,
  Identity,
  NodeState,
} from './server-types.js';

export function createDiscoveryServer(options: DiscoveryServerOptions): DiscoveryServer {
  const log: Logger = options.log ?? discardingLogger;
  const events = new EventEmitter();
  const changed = (): void => {
    events.emit('change');
  };
  let listener: GrpcListener | undefined;
  let starting = false;
  const subscriptions = createFleetSubscriptions(log, options.trace);
  const streams = createStreamSet({
    log,
    reportRate: options.reportRate ?? SERVER_DEFAULTS.reportRate,
    onDropped(stream) {
      subscriptions.unsubscribe(stream);
      certificates?.forget(stream);
      log.info(`discovery: ${describeStream(stream)} disconnected`);
      changed();
    },
  });
  const pins = options.auth.mode === 'mtls' ? options.auth.certificates : undefined;
  const certificates = pins === undefined ? undefined : enforceCertificatePins(pins, streams);
  const handle = createStreamHandler({
    ...(certificates === undefined ? {} : { certificates }),
    streams,
    subscriptions,
    auth: createStreamAuth(options.auth, {
      tokenReviewCache: options.tokenReviewCache ?? SERVER_DEFAULTS.tokenReviewCache,
      allowReview: (peer) => listener?.front.allowReview(peer) === true,
    }),
    reports: { log, changed, resendAfterNack: subscriptions.resendAfterNack },
    helloTimeoutMs: options.helloTimeoutMs ?? SERVER_DEFAULTS.helloTimeoutMs,
    log,
    authorized: (peer) => listener?.front.authorized(peer),
    changed,
  });

  return {
    async start() {
      if (starting) throw new PorticoError('E_DISCOVERY', 'discovery server already started');
      starting = true;
      try {
        listener = await listenGrpc(options, handle, log);
      } catch (error) {
        starting = false;
        throw error;
      }
      const host = options.address.replace(/:\d+$/, '');
      log.info(`discovery: listening on ${host}:${listener.port} (${options.auth.mode})`);
      return { port: listener.port };
    },
    async close() {
      for (const stream of streams.all()) {
        streams.fail(stream, status.UNAVAILABLE, 'discovery server shutting down');
      }
      certificates?.stop();
      const closing = listener;
      listener = undefined;
      starting = false;
      await closing?.close();
    },
    setFleet(config, change) {
      checkFleetConfig(config, change);
      subscriptions.setFleet(config, change);
    },
    removeFleet: (name) => subscriptions.removeFleet(name),
    nodes() {
      return streams
        .all()
        .filter((s) => s.subscribed && !s.closed)
        .map((s) => ({
          ...s.state,
          appliedGateways: { ...s.state.appliedGateways },
          listenerErrors: s.state.listenerErrors.map((e) => ({ ...e })),
        }));
    },
    on: (event, listener) => events.on(event, listener),
    off: (event, listener) => events.off(event, listener),
  };
}

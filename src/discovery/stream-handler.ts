// One discovery stream from open to end: a hello within the deadline, then authentication (only after the
// hello, so a stream that sends none costs no token review), authorization, one stream per node, and the
// subscription to the fleet; afterwards the proxy's Acks and Nacks.
import { type handleBidiStreamingCall, status } from '@grpc/grpc-js';
import type { Logger } from '../platform/log-line.js';
import type { CertificateEnforcement } from './certificate-enforcement.js';
import type { FleetSubscriptions } from './fleet-subscriptions.js';
import type { ClientMessage, Hello, ServerMessage } from './protocol.js';
import { describeStream, type Stream, type StreamSet } from './server-streams.js';
import type { Identity } from './server-types.js';
import type { StreamAuth } from './stream-auth.js';
import { handleReport, type ReportHandling } from './stream-reports.js';

export interface StreamHandling {
  streams: StreamSet;
  auth: StreamAuth;
  subscriptions: FleetSubscriptions;
  reports: ReportHandling;
  helloTimeoutMs: number;
  log: Logger;
  /** The stream's connection carries an authorized stream now (the TLS front stops counting it). */
  authorized(peer: string): void;
  /** Mutual TLS with a certificate table: streams are closed when their certificate stops being accepted. */
  certificates?: CertificateEnforcement;
  changed(): void;
}

export function createStreamHandler(
  handling: StreamHandling,
): handleBidiStreamingCall<ClientMessage, ServerMessage> {
  const { streams } = handling;
  return (call) => {
    const stream = streams.open(call);
    let sawHello = false;
    stream.timers.push(
      setTimeout(() => {
        if (!sawHello)
          streams.fail(stream, status.DEADLINE_EXCEEDED, `no hello within ${handling.helloTimeoutMs} ms`);
      }, handling.helloTimeoutMs),
    );
    call.on('data', (received: ClientMessage) => {
      if (stream.closed) return;
      if (received.kind === 'hello' && received.hello) {
        if (sawHello) return streams.fail(stream, status.INVALID_ARGUMENT, 'hello sent twice on one stream');
        sawHello = true;
        const hello = received.hello;
        void admit(stream, hello, handling).catch((error: unknown) =>
          streams.fail(stream, status.INTERNAL, `hello failed: ${(error as Error).message}`),
        );
      } else if (!stream.subscribed) {
        // Ack or Nack before the hello was accepted: nothing was sent that it could answer.
      } else handleReport(stream, received, handling.reports);
    });
    call.on('end', () => {
      streams.drop(stream);
      call.end();
    });
    call.on('error', () => streams.drop(stream));
    call.on('cancelled', () => streams.drop(stream));
  };
}

/** Authenticates the stream, then subscribes it to its hello's fleet if it may have it. */
async function admit(stream: Stream, hello: Hello, handling: StreamHandling): Promise<void> {
  const { streams } = handling;
  const who = await handling.auth.authenticate(stream.call);
  if (!who.ok) return streams.fail(stream, who.refusal.code, who.refusal.details);
  if (who.value.expiresAt !== undefined) streams.expireAt(stream, who.value.expiresAt);
  if (stream.closed) return;
  await onHello(stream, hello, who.value, handling);
}

async function onHello(stream: Stream, hello: Hello, identity: Identity, handling: StreamHandling) {
  const { streams, subscriptions } = handling;
  if (hello.node === '' || hello.fleet === '') {
    streams.fail(stream, status.INVALID_ARGUMENT, 'the first message must be a hello naming node and fleet');
    return;
  }
  stream.state.node = hello.node;
  stream.state.fleet = hello.fleet;
  const refusal = await handling.auth.authorize(identity, hello);
  if (refusal !== undefined) return streams.fail(stream, refusal.code, refusal.details);
  if (stream.closed) return;
  // One stream per node: a second one claiming a connected node id is someone else (or a stale duplicate).
  if (subscriptions.hasNode(hello.fleet, hello.node)) {
    const details = `node '${hello.node}' of fleet '${hello.fleet}' is already connected`;
    return streams.fail(stream, status.ALREADY_EXISTS, details);
  }
  handling.authorized(stream.call.getPeer());
  const known = subscriptions.subscribe(stream);
  if (identity.certificateFingerprint !== undefined) {
    handling.certificates?.watch(stream, identity.certificateFingerprint);
  }
  handling.log.info(`discovery: ${describeStream(stream)} connected${known ? '' : ' (fleet not known yet)'}`);
  handling.changed();
}

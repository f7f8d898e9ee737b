// A misbehaving tenant's discovery traffic against the controller's port, from the test host: a stream with a
// fleet's valid token that sends Acks and Nacks in a tight loop, and a flood of unauthenticated TLS connections.
import { once } from 'node:events';
import { connect, type TLSSocket } from 'node:tls';
import { Client, type ClientDuplexStream, Metadata, type StatusObject } from '@grpc/grpc-js';
import type { ClientMessage, ServerMessage } from '../../../src/discovery/protocol.js';
import { streamMethod } from '../../../src/discovery/protocol.js';
import { createTls13ChannelCredentials } from '../../../src/discovery/tls.js';

export interface AckLoop {
  /** Configs the server sent (the hello was accepted once this is above 0). */
  received(): number;
  /** Acks and Nacks written so far. */
  sent(): number;
  /** Stops writing and closes the stream; the status the server closed it with, if it did first. */
  stop(): Promise<StatusObject | undefined>;
}

export interface AckLoopOptions {
  /** `ip:port` of one controller replica's discovery port. */
  address: string;
  caPem: string;
  /** The name the server's certificate carries (portico-gateway.<namespace>.svc). */
  serverName: string;
  token: string;
  fleet: string;
  node: string;
}

/**
 * Says hello as `node` of `fleet`, waits for the config, then writes Acks whose report changes every time, with
 * a Nack of a stale version now and then, as fast as the stream drains, until stop().
 */
export function startAckLoop(options: AckLoopOptions): AckLoop {
  const method = streamMethod();
  const client = new Client(options.address, createTls13ChannelCredentials({ caPem: options.caPem }), {
    'grpc.ssl_target_name_override': options.serverName,
    'grpc.default_authority': options.serverName,
    'grpc.max_receive_message_length': -1,
  });
  const metadata = new Metadata();
  metadata.set('authorization', `Bearer ${options.token}`);
  const call: ClientDuplexStream<ClientMessage, ServerMessage> = client.makeBidiStreamRequest(
    method.path,
    method.requestSerialize,
    method.responseDeserialize,
    metadata,
  );
  let received = 0;
  let sent = 0;
  let stopped = false;
  let version = '';
  let closedWith: StatusObject | undefined;
  const closed = new Promise<void>((resolve) => {
    call.on('status', (status: StatusObject) => {
      closedWith = status;
      resolve();
    });
  });
  call.on('error', () => {});
  const configured = new Promise<void>((resolve) => {
    call.on('data', (message: ServerMessage) => {
      received++;
      version = message.version;
      resolve();
    });
  });
  call.write({ hello: { node: options.node, fleet: options.fleet, appliedVersion: '' } });

  const report = (i: number): ClientMessage =>
    i % 8 === 7
      ? { nack: { version: '1', nonce: String(i), error: `rogue nack ${i}` } }
      : {
          ack: {
            version,
            nonce: String(i),
            listenerErrors: i % 2 === 0 ? [] : [{ listener: 'http', message: `rogue ${i}` }],
            appliedGateways: [{ name: options.fleet, generation: 1 }],
            rejectedResources: [],
          },
        };

  const loop = (async () => {
    await Promise.race([configured, closed]);
    while (!stopped && closedWith === undefined) {
      if (!call.write(report(sent++))) {
        await Promise.race([once(call, 'drain').catch(() => undefined), closed]);
      }
      // Let replies and the stream's own I/O through now and then; the loop is otherwise as tight as it goes.
      if (sent % 64 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
  })();

  return {
    received: () => received,
    sent: () => sent,
    async stop() {
      stopped = true;
      await loop;
      const before = closedWith;
      call.cancel();
      client.close();
      return before;
    },
  };
}

export interface ConnectionFlood {
  /** Connections attempted, and those whose TLS handshake the server completed. */
  stats(): { attempted: number; secured: number };
  stop(): Promise<{ attempted: number; secured: number }>;
}

/**
 * `workers` loops per target, each opening a TLS connection that never authenticates (no hello, no token) and
 * opening the next as soon as the server closes or refuses it, until stop().
 */
export function startConnectionFlood(
  targets: { host: string; port: number }[],
  workers: number,
): ConnectionFlood {
  let stopped = false;
  let attempted = 0;
  let secured = 0;
  const open = new Set<TLSSocket>();

  async function worker(target: { host: string; port: number }): Promise<void> {
    while (!stopped) {
      attempted++;
      const socket = connect({
        host: target.host,
        port: target.port,
        rejectUnauthorized: false,
        minVersion: 'TLSv1.3',
        ALPNProtocols: ['h2'],
      });
      open.add(socket);
      socket.on('secureConnect', () => {
        secured++;
      });
      // Resets are the server refusing: expected, and nothing to wait for but the close.
      const closed = new Promise((resolve) => socket.once('close', resolve));
      socket.on('error', () => {});
      await closed;
      open.delete(socket);
      // A refused connection closes at once: a short pause keeps the flood from spinning this machine's CPU.
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  const loops = targets.flatMap((t) => Array.from({ length: workers }, () => worker(t)));
  return {
    stats: () => ({ attempted, secured }),
    async stop() {
      stopped = true;
      for (const socket of open) socket.destroy();
      await Promise.all(loops);
      return { attempted, secured };
    },
  };
}

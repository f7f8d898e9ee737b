// Shared pieces of the discovery tests: certificates, sample fleets, a raw protocol stream, and waiting.
import { Client, type ClientDuplexStream, Metadata, type StatusObject } from '@grpc/grpc-js';
import {
  type GeneratedCertificates,
  generateCertificates,
  type IssuedCertificate,
  issueFleetCertificate,
} from '../../src/certificates/certs.js';
import type { ClientMessage, ServerMessage } from '../../src/discovery/protocol.js';
import { streamMethod } from '../../src/discovery/protocol.js';
import { createTls13ChannelCredentials } from '../../src/discovery/tls.js';
import {
  FLEET_CONFIG_SCHEMA_VERSION,
  type FleetConfig,
  type VirtualHost,
} from '../../src/ir/fleet-config.js';

let certs: GeneratedCertificates | undefined;
/** One certificate set per test file (key generation is the slow part). */
export function testCertificates(): GeneratedCertificates {
  certs ??= generateCertificates({ namespace: 'test-ns' });
  return certs;
}

const fleetIdentities = new Map<string, IssuedCertificate>();
/** The client TLS of a fleet: the test CA, and that fleet's own certificate (one per fleet and test file). */
export function fleetTls(fleet: string): { caPem: string; certPem: string; keyPem: string } {
  const ca = testCertificates();
  let issued = fleetIdentities.get(fleet);
  if (issued === undefined) {
    issued = issueFleetCertificate(ca.caCertPem, ca.caKeyPem, fleet);
    fleetIdentities.set(fleet, issued);
  }
  return { caPem: ca.caCertPem, certPem: issued.certPem, keyPem: issued.keyPem };
}

export function virtualHost(hostname: string, cluster: string, prefix = '/'): VirtualHost {
  return {
    name: `port-80/${hostname}`,
    listener: 'port-80',
    hostname,
    routes: [
      {
        name: `default/${hostname}/rule/0/match/0`,
        routeRef: { namespace: 'default', name: hostname, rule: 0 },
        match: { path: { type: 'PathPrefix', value: prefix }, headers: [], queryParams: [] },
        filters: [],
        action: { type: 'Forward', backends: [{ weight: 1, cluster, filters: [] }], timeoutMs: 15000 },
      },
    ],
  };
}

/** A small but complete fleet: one listener, the given virtual hosts, one cluster with one endpoint. */
export function sampleFleet(fleet = 'default/eg', hosts: VirtualHost[] = [], generation = 1): FleetConfig {
  const vhosts = hosts.length > 0 ? hosts : [virtualHost('a.example.com', 'default/a:80')];
  return {
    schemaVersion: FLEET_CONFIG_SCHEMA_VERSION,
    fleet,
    gateways: [{ name: fleet.includes('/') ? fleet : `default/${fleet}`, generation }],
    listeners: [
      {
        name: 'port-80',
        port: 80,
        protocol: 'HTTP',
        gatewayListeners: [{ gateway: 'default/eg', listener: 'http' }],
      },
    ],
    virtualHosts: [...vhosts].sort((a, b) => (a.name < b.name ? -1 : 1)),
    clusters: [
      { name: 'default/a:80', service: { namespace: 'default', name: 'a', port: 80 }, protocol: 'http' },
    ],
    endpoints: [{ name: 'default/a:80', endpoints: [{ address: '10.0.0.1', port: 8080 }] }],
    secrets: [],
    policies: [],
  };
}

/** Polls until `check` returns a value other than undefined/false; fails naming `what` after `timeoutMs`. */
export async function waitFor<T>(
  what: string,
  check: () => T | undefined | false,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export interface RawStream {
  messages: ServerMessage[];
  /** Resolves with the call's final status once the server (or transport) ends it. */
  closed: Promise<StatusObject>;
  next(): Promise<ServerMessage>;
  write(message: ClientMessage): void;
  close(): void;
}

/** A protocol-level stream, to see exactly what the server sends. */
export function openRawStream(options: {
  port: number;
  tls: { caPem: string; certPem?: string; keyPem?: string };
  token?: string;
  fleet?: string;
  node?: string;
  /** False: open the stream without the hello. */
  hello?: boolean;
}): RawStream {
  const method = streamMethod();
  const client = new Client(`127.0.0.1:${options.port}`, createTls13ChannelCredentials(options.tls), {
    'grpc.max_receive_message_length': -1,
    'grpc.ssl_target_name_override': 'localhost', // an IP as SNI makes Node warn
  });
  const metadata = new Metadata();
  if (options.token !== undefined) metadata.set('authorization', `Bearer ${options.token}`);
  const call: ClientDuplexStream<ClientMessage, ServerMessage> = client.makeBidiStreamRequest(
    method.path,
    method.requestSerialize,
    method.responseDeserialize,
    metadata,
  );
  const messages: ServerMessage[] = [];
  let consumed = 0;
  const waiters: (() => void)[] = [];
  call.on('data', (message: ServerMessage) => {
    messages.push(message);
    for (const wake of waiters.splice(0)) wake();
  });
  call.on('error', () => {});
  const closed = new Promise<StatusObject>((resolve) => {
    call.on('status', (status: StatusObject) => {
      client.close();
      resolve(status);
    });
  });
  if (options.hello !== false) {
    call.write({
      hello: { node: options.node ?? 'node-1', fleet: options.fleet ?? 'default/eg', appliedVersion: '' },
    });
  }
  return {
    messages,
    closed,
    async next() {
      while (consumed >= messages.length) {
        const arrived = new Promise<void>((resolve) => waiters.push(resolve));
        const ended = closed.then((s) => {
          throw new Error(`stream closed before the next message: ${s.code} ${s.details}`);
        });
        await Promise.race([arrived, ended, timeout(10_000, 'the next discovery message')]);
      }
      return messages[consumed++]!;
    },
    write(message) {
      call.write(message);
    },
    close() {
      call.cancel();
    },
  };
}

function timeout(ms: number, what: string): Promise<never> {
  return new Promise((_, reject) => {
    setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms).unref();
  });
}

export function decodeResources(message: ServerMessage): { type: string; name: string; value: unknown }[] {
  return message.resources.map((r) => ({
    type: r.type,
    name: r.name,
    value: JSON.parse(r.body.toString('utf8')),
  }));
}

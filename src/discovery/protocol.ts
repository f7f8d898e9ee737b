// The discovery wire protocol: the .proto loaded at run time, and TypeScript shapes of its messages.
import { fileURLToPath } from 'node:url';
import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';

// src/discovery and dist/discovery are both two levels below the package root, where proto/ ships.
const PROTO_FILE = fileURLToPath(
  new URL('../../proto/portico/discovery/v1/discovery.proto', import.meta.url),
);
const SERVICE_NAME = 'portico.discovery.v1.FleetDiscovery';

export interface Hello {
  node: string;
  fleet: string;
  appliedVersion: string;
}

export interface ListenerErrorMessage {
  listener: string;
  message: string;
}

export interface GatewayGenerationMessage {
  name: string;
  generation: number;
}

export interface RejectedResourceMessage {
  type: string;
  name: string;
  error: string;
}

export interface Ack {
  version: string;
  nonce: string;
  listenerErrors: ListenerErrorMessage[];
  appliedGateways: GatewayGenerationMessage[];
  /** Absent from proxies older than this field (proto3 decodes it as empty). */
  rejectedResources?: RejectedResourceMessage[];
}

export interface Nack {
  version: string;
  nonce: string;
  error: string;
}

/** Exactly one of hello, ack, nack; `kind` names it (proto-loader's virtual oneof field). */
export interface ClientMessage {
  kind?: 'hello' | 'ack' | 'nack';
  hello?: Hello | null;
  ack?: Ack | null;
  nack?: Nack | null;
}

export interface ResourceMessage {
  type: string;
  name: string;
  body: Buffer;
}

export interface ResourceKeyMessage {
  type: string;
  name: string;
}

export interface ServerMessage {
  version: string;
  nonce: string;
  full: boolean;
  schemaVersion: number;
  resources: ResourceMessage[];
  removed: ResourceKeyMessage[];
}

export type StreamMethod = MethodDefinition<ClientMessage, ServerMessage>;

let loaded: ServiceDefinition | undefined;

/** The FleetDiscovery service definition (loaded once). */
export function discoveryService(): ServiceDefinition {
  if (loaded === undefined) {
    const definition = loadSync(PROTO_FILE, {
      keepCase: false,
      longs: Number,
      enums: String,
      defaults: true,
      arrays: true,
      oneofs: true,
    });
    loaded = definition[SERVICE_NAME] as ServiceDefinition;
  }
  return loaded;
}

export function streamMethod(): StreamMethod {
  return discoveryService().Stream as StreamMethod;
}

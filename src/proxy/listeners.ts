// One bound socket per Listener: an HTTP or HTTPS server with the hardening limits, connection accounting,
// malformed-input handling, and graceful removal; or a layer-4 (TLS, TCP, UDP) server from layer4/.
import type { AddressInfo, ListenOptions } from 'node:net';
import type { Listener, ListenerLimits, ProxyProtocolPolicy } from '../ir/fleet-config.js';
import { PorticoError } from '../platform/errors.js';
import { applyClientIpRule, compileClientIpRule, inBlockList, trustedBlockList } from './client-address.js';
import { type ClientServer, createClientServer } from './downstream/client-server.js';
import { createH2Listener } from './downstream/h2/server.js';
import type { ProxyHeaderOptions } from './downstream/proxy-header.js';
import {
  type CertificateTable,
  clientCertificateRequest,
  misdirectedHost,
  selectCertificate,
  sessionOptions,
} from './downstream/tls.js';
import type { ClientRequest, ListenerContext } from './exchange.js';
import { handleRequest, respondLocally } from './handler.js';
import { type NativeRelay, nativeRelay } from './layer4/native-relay.js';
import { createNativeStreamListener } from './layer4/native-stream-listener.js';
import { createStreamListener, type Layer4Server } from './layer4/stream-listener.js';
import { createUdpListener } from './layer4/udp-flows.js';
import type { Http2Limits, ProxyLimits } from './options.js';
import { hostWithoutPort } from './routing/route-table.js';
import type { ProxyRuntime } from './runtime.js';
import { handleUpgrade } from './upgrade.js';
import { clientIp } from './wire/headers.js';

export interface BoundListener {
  context: ListenerContext;
  /**
   * The config's Listener as last applied: a change of its socket limits binds it again, and a layer-4 server reads
   * its TLS choices per connection.
   */
  listener: Listener;
  protocol: Listener['protocol'];
  server: ClientServer | Layer4Server;
  address: string;
  port: number;
  /** HTTPS only: replaced on each apply; the SNI callback reads the current one. */
  certificates?: CertificateTable;
  /** HTTPS only: the certificate of the default context, to notice a change. */
  defaultCertificate?: string;
  /** HTTPS only: whether the default context resumes sessions (CertificateTable.resumable). */
  resumable?: boolean;
  /** HTTPS only: the client certificate check the server was last set up with. */
  clientValidation?: CertificateTable['clientValidation'];
}

/** The answer to an upgrade for a host the connection's certificate was not chosen for. */
const MISDIRECTED_UPGRADE =
  'HTTP/1.1 421 Misdirected Request\r\nserver: portico\r\ncontent-length: 0\r\nconnection: close\r\n\r\n';

/** An HTTPS request whose Host falls under another certificate entry than its connection's SNI (tls.ts). */
function misdirected(bound: Omit<BoundListener, 'server'>, req: ClientRequest): boolean {
  const table = bound.certificates;
  const host = req.host;
  if (table === undefined || host === undefined) return false;
  return misdirectedHost(table, req.client.serverName, hostWithoutPort(host));
}

/** The proxy's limits with what the listener sets in their place (ir ListenerLimits). */
export function listenerLimits(defaults: ProxyLimits, own: ListenerLimits | undefined): ProxyLimits {
  if (own === undefined) return defaults;
  return {
    ...defaults,
    maxHeaderSize: own.maxHeaderBytes ?? defaults.maxHeaderSize,
    maxHeadersCount: own.maxHeaders ?? defaults.maxHeadersCount,
    maxConnections: own.maxConnections ?? defaults.maxConnections,
    headersTimeoutMs: own.headerTimeoutMs ?? defaults.headersTimeoutMs,
    tlsHandshakeTimeoutMs: own.tlsHandshakeTimeoutMs ?? defaults.tlsHandshakeTimeoutMs,
    keepAliveTimeoutMs: own.idleTimeoutMs ?? defaults.keepAliveTimeoutMs,
    maxRequestBodyBytes: own.maxRequestBodyBytes ?? defaults.maxRequestBodyBytes,
  };
}

/** The proxy's HTTP/2 limits with the listener's header limits (a header list's pairs count its 4 pseudo-headers). */
function listenerHttp2Limits(defaults: Http2Limits, own: ListenerLimits | undefined): Http2Limits {
  if (own?.maxHeaderBytes === undefined && own?.maxHeaders === undefined) return defaults;
  return {
    ...defaults,
    maxHeaderListSize: own.maxHeaderBytes ?? defaults.maxHeaderListSize,
    maxHeaderListPairs: own.maxHeaders === undefined ? defaults.maxHeaderListPairs : own.maxHeaders + 4,
  };
}

/** What a request reads of its listener's config; set again, in place, by every apply. */
export function setListenerPolicies(
  context: ListenerContext,
  listener: Listener,
  defaults: ProxyLimits,
): void {
  const rule = listener.clientIp === undefined ? undefined : compileClientIpRule(listener.clientIp);
  context.findClient = rule === undefined ? undefined : (request) => applyClientIpRule(rule, request);
  context.maxRequestBodyBytes = listenerLimits(defaults, listener.limits).maxRequestBodyBytes;
}

/** A listener's PROXY protocol policy as its server takes it: refusals are logged (warn) and counted. */
function proxyHeaderOptions(rt: ProxyRuntime, name: string, policy: ProxyProtocolPolicy): ProxyHeaderOptions {
  const trusted = trustedBlockList(policy.trustedCidrs);
  return {
    trusted: (address) => address !== undefined && inBlockList(trusted, clientIp(address)),
    timeoutMs: policy.timeoutMs,
    refused: (reason) => {
      rt.metrics.connectionRefused(name);
      rt.options.log.warn(`listener ${name}: connection refused: ${reason}`);
    },
  };
}

/** Whether the settings a listener's socket was bound with (all but the per-request ones) differ. */
export function sameSocketLimits(a: Listener, b: Listener): boolean {
  // A layer-4 server reads its limits per connection and flow: never bound again for them (a UDP socket still
  // serving its flows would hold the port a new one needs).
  if (isLayer4(a.protocol) && a.protocol === b.protocol) return true;
  const x = a.limits;
  const y = b.limits;
  return (
    x?.maxHeaderBytes === y?.maxHeaderBytes &&
    x?.maxHeaders === y?.maxHeaders &&
    x?.maxConnections === y?.maxConnections &&
    x?.headerTimeoutMs === y?.headerTimeoutMs &&
    x?.tlsHandshakeTimeoutMs === y?.tlsHandshakeTimeoutMs &&
    x?.idleTimeoutMs === y?.idleTimeoutMs &&
    JSON.stringify(a.proxyProtocol) === JSON.stringify(b.proxyProtocol)
  );
}

function createListenerServer(
  rt: ProxyRuntime,
  bound: Omit<BoundListener, 'server'>,
  limits: ProxyLimits,
): ClientServer {
  const context = bound.context;
  const name = context.name;
  return createClientServer({
    ...limits,
    tls:
      bound.protocol === 'HTTPS'
        ? {
            cert: bound.certificates?.fallbackSecret.certificatePem,
            key: bound.certificates?.fallbackSecret.privateKeyPem,
            ...sessionOptions(bound.certificates),
            ...clientCertificateRequest(bound.certificates),
            SNICallback: (serverName, done) => {
              const table = bound.certificates;
              if (table === undefined) done(new PorticoError('E_CERTIFICATE', 'no certificates'));
              else done(null, selectCertificate(table, serverName));
            },
          }
        : undefined,
    onRequest: (req, res) => {
      if (misdirected(bound, req)) respondLocally(res, 421, rt.draining || context.closing);
      else handleRequest(rt, context, req, res);
    },
    onUpgrade: (req, socket, head) => {
      if (misdirected(bound, req)) socket.end(MISDIRECTED_UPGRADE);
      else handleUpgrade(rt, context, req, socket, head);
    },
    http2: createH2Listener(
      rt,
      context,
      () => bound.certificates,
      (on, req, res) => handleRequest(rt, on, req, res),
      listenerHttp2Limits(rt.options.http2, bound.listener.limits),
    ),
    onConnection: (socket) => {
      rt.metrics.connectionOpened(name);
      socket.on('close', () => rt.metrics.connectionClosed(name));
    },
    onRefused: () => rt.metrics.connectionRefused(name),
    ...(bound.listener.proxyProtocol === undefined
      ? {}
      : { proxyProtocol: proxyHeaderOptions(rt, name, bound.listener.proxyProtocol) }),
  });
}

function isLayer4(protocol: Listener['protocol']): boolean {
  return protocol === 'TLS' || protocol === 'TCP' || protocol === 'UDP';
}

let relayTold = false;

/** The native relay when the options ask for it and it loads; undefined: Node's sockets. Said once which, and why. */
function layer4Relay(rt: ProxyRuntime): NativeRelay | undefined {
  if (rt.options.layer4Relay !== 'native') return undefined;
  const relay = nativeRelay(rt.options.upstreamConnectTimeoutMs, rt.options.log);
  if (!relayTold) {
    relayTold = true;
    if (relay instanceof Error)
      rt.options.log.warn(
        `layer-4 listeners use Node's sockets: the native relay does not load (${relay.message})`,
      );
    else rt.options.log.info('layer-4 listeners relay on the native thread (portico-l4)');
  }
  return relay instanceof Error ? undefined : relay;
}

/** A layer-4 listener: its server reads the bound listener's current config and certificates per connection. */
async function bindLayer4Listener(
  rt: ProxyRuntime,
  bound: BoundListener,
  port: number,
): Promise<BoundListener> {
  const name = bound.context.name;
  const relay = bound.protocol === 'UDP' ? undefined : layer4Relay(rt);
  const server =
    bound.protocol === 'UDP'
      ? createUdpListener(rt, name, () => bound.listener)
      : relay === undefined
        ? createStreamListener(
            rt,
            name,
            () => bound.listener,
            () => bound.certificates,
          )
        : createNativeStreamListener(
            rt,
            name,
            () => bound.listener,
            () => bound.certificates,
            relay,
          );
  bound.server = server;
  const address = await server.listen(rt.options.bindAddress, port, rt.options.reusePort);
  bound.port = address.port;
  bound.address = address.address;
  return bound;
}

export async function bindListener(
  rt: ProxyRuntime,
  listener: Listener,
  port: number,
  certificates: CertificateTable | undefined,
): Promise<BoundListener> {
  const context: ListenerContext = {
    name: listener.name,
    proto: listener.protocol === 'HTTPS' ? 'https' : 'http',
    closing: false,
    findClient: undefined,
    maxRequestBodyBytes: 0,
  };
  setListenerPolicies(context, listener, rt.options.limits);
  const bound = {
    context,
    listener,
    protocol: listener.protocol,
    address: rt.options.bindAddress,
    port,
    certificates,
    defaultCertificate: certificates?.fallbackSecret.certificatePem,
    resumable: certificates?.resumable,
    clientValidation: certificates?.clientValidation,
  } satisfies Omit<BoundListener, 'server'> as BoundListener;
  if (isLayer4(listener.protocol)) return bindLayer4Listener(rt, bound, port);
  const server = createListenerServer(rt, bound, listenerLimits(rt.options.limits, listener.limits));
  bound.server = server;
  const net = server.server;
  await new Promise<void>((resolve, reject) => {
    net.once('error', (error) => {
      // Also stops the server's timeout sweep.
      server.close();
      reject(error);
    });
    // `reusePort` is not in Node 20's types; only a proxy on a Node that has it sets it (see workers/pool.ts).
    const listen: ListenOptions & { reusePort?: boolean } = { host: rt.options.bindAddress, port };
    if (rt.options.reusePort) Object.assign(listen, { reusePort: true, exclusive: true });
    net.listen(listen, () => {
      net.removeAllListeners('error');
      resolve();
    });
  });
  net.on('error', (error) => rt.options.log.error(`listener ${listener.name}: ${error.message}`));
  const address = net.address() as AddressInfo;
  bound.port = address.port;
  bound.address = address.address;
  return bound;
}

/**
 * Installs new certificates; the default context is rebuilt only when its certificate, resumability or client
 * check changed. Connections already open keep the check they were accepted with.
 */
export function updateCertificates(bound: BoundListener, certificates: CertificateTable): void {
  bound.certificates = certificates;
  const secret = certificates.fallbackSecret;
  // A TLS (layer-4) listener picks its certificate per connection from `bound.certificates`: no default context.
  if (!('setSecureContext' in bound.server)) return;
  const validation = certificates.clientValidation;
  const validationChanged =
    bound.clientValidation?.caPem !== validation?.caPem || bound.clientValidation?.mode !== validation?.mode;
  if (validationChanged) {
    bound.server.requestClientCertificates(clientCertificateRequest(certificates));
    bound.clientValidation = validation;
  }
  if (
    validationChanged ||
    bound.defaultCertificate !== secret.certificatePem ||
    bound.resumable !== certificates.resumable
  ) {
    bound.server.setSecureContext({
      cert: secret.certificatePem,
      key: secret.privateKeyPem,
      ...sessionOptions(certificates),
    });
    bound.defaultCertificate = secret.certificatePem;
    bound.resumable = certificates.resumable;
  }
}

/**
 * Stops accepting, closes idle keep-alive connections, lets requests in flight finish (their responses
 * carry `connection: close`), and cuts what is left after `maxMs`.
 */
export function closeListener(bound: BoundListener, maxMs: number): Promise<void> {
  bound.context.closing = true;
  return new Promise((resolve) => {
    const timer = setTimeout(() => bound.server.closeAllConnections(), maxMs);
    bound.server.close(() => {
      clearTimeout(timer);
      resolve();
    });
    bound.server.closeIdleConnections();
  });
}

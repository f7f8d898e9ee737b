// Layer 4 on the real cluster through one small Gateway, in whichever namespace mode the file installed: a TCP
// listener, a TLS passthrough listener (the backend pod ends TLS, the proxy only reads the ClientHello) and a UDP
// listener, to one backend pod echoing on each. With a TCP connection, a passed-through TLS connection and a UDP
// flow open, the Gateway gains a listener (a new port on its Service and in its proxies): the open ones go on
// being served, unbroken (the proxies' pods do not change: their template names no listener port), and the new
// port serves too.
import assert from 'node:assert/strict';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { test } from 'node:test';
import { TLSSocket, connect as tlsConnect } from 'node:tls';
import { DEFAULT_CONTROLLER_NAME } from '../../../../src/api/controller-config.js';
import { fleetInfraName } from '../../../../src/ir/fleet-infra.js';
import type { Cluster } from '../../../cluster/harness.js';
import { asList, asObject, call, eventually } from '../../../cluster/kube-api.js';
import { selfSigned } from '../../../support/certs.js';
import { E2E_SKIP, restrictedNamespace } from '../install.js';
import {
  apply,
  gatewayClass,
  gatewayOf,
  podDeployment,
  programmedAddress,
  smallProxies,
} from '../traffic.js';

/** The Gateway's name, unique among the suites: in Controller Namespace Mode its pods share the controller's. */
const GATEWAY = 'layer4';
const TCP_PORT = 7000;
const TLS_PORT = 8443;
const UDP_PORT = 5353;
/** The listener added while connections are open. */
const LATER_PORT = 7001;
const SERVER_NAME = 'secure.example.com';
const backendCert = selfSigned(SERVER_NAME, [SERVER_NAME]);
let cluster: Cluster;
let ns: string;

// One pod echoing upper-cased: TCP on TCP_PORT, TLS (its own certificate) on TLS_PORT, UDP datagrams on UDP_PORT.
const ECHO_SCRIPT = `
const up = (s) => s.on('data', (d) => s.write(d.toString().toUpperCase()));
require('node:net').createServer(up).listen(${TCP_PORT});
require('node:tls').createServer({ cert: process.env.CERT, key: process.env.KEY }, up).listen(${TLS_PORT});
const udp = require('node:dgram').createSocket('udp4');
udp.on('message', (m, r) => udp.send(m.toString().toUpperCase(), r.port, r.address));
udp.bind(${UDP_PORT});
`;

async function echoPod(): Promise<void> {
  const echo = {
    name: 'echo',
    command: ['node', '-e', ECHO_SCRIPT],
    env: [
      { name: 'CERT', value: backendCert.certificatePem },
      { name: 'KEY', value: backendCert.privateKeyPem },
    ],
  };
  await podDeployment(cluster, ns, 'l4-echo', echo, TLS_PORT);
  await apply(cluster, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'l4-echo', namespace: ns },
    spec: {
      selector: { app: 'l4-echo' },
      ports: [
        { name: 'tcp', port: TCP_PORT, protocol: 'TCP' },
        { name: 'tls', port: TLS_PORT, protocol: 'TCP' },
        { name: 'udp', port: UDP_PORT, protocol: 'UDP' },
      ],
    },
  } as never);
}

type Listener = { name: string; port: number; protocol: string; tls?: { mode: string } };

const LISTENERS: Listener[] = [
  { name: 'tcp', port: TCP_PORT, protocol: 'TCP' },
  { name: 'tls', port: TLS_PORT, protocol: 'TLS', tls: { mode: 'Passthrough' } },
  { name: 'udp', port: UDP_PORT, protocol: 'UDP' },
];

function layer4Gateway(listeners: Listener[]): Promise<void> {
  return gatewayOf(cluster, ns, GATEWAY, { gatewayClassName: 'portico', listeners }, 'small');
}

function layer4Route(
  kind: string,
  name: string,
  section: string,
  port: number,
  extra = {},
): Promise<unknown> {
  return apply(cluster, {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind,
    metadata: { name, namespace: ns },
    spec: {
      parentRefs: [{ name: GATEWAY, sectionName: section }],
      ...extra,
      rules: [{ backendRefs: [{ name: 'l4-echo', port }] }],
    },
  } as never);
}

/** Runs in the file's before(), once Portico is installed in `system`. */
export async function setup(c: Cluster, system: string): Promise<void> {
  cluster = c;
  ns = `layer4-${system.replace(/^portico-/, '')}`;
  await gatewayClass(cluster, 'portico', DEFAULT_CONTROLLER_NAME);
  await restrictedNamespace(cluster, ns);
  await echoPod();
  await smallProxies(cluster, ns, 'small');
  await layer4Gateway(LISTENERS);
  await layer4Route('TCPRoute', 'tcp', 'tcp', TCP_PORT);
  await layer4Route('TLSRoute', 'tls', 'tls', TLS_PORT, { hostnames: [SERVER_NAME] });
  await layer4Route('UDPRoute', 'udp', 'udp', UDP_PORT);
}

/** Writes `text` and waits for its upper-cased echo (the test's timeout bounds the wait). */
async function echoed(socket: Socket | TLSSocket, text: string): Promise<void> {
  let seen = '';
  const want = text.toUpperCase();
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      if (!seen.includes(want)) return;
      socket.off('data', onData);
      resolve();
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.once('close', () => reject(new Error(`closed before the echo of ${text}`)));
    socket.write(text);
  });
}

/** A UDP client whose replies are kept; one local port, so one flow through the proxy. */
async function udpClient(address: string): Promise<{ socket: UdpSocket; replies: string[] }> {
  const socket = createSocket('udp4');
  const replies: string[] = [];
  socket.on('message', (m) => replies.push(m.toString()));
  socket.bind(0);
  await once(socket, 'listening');
  socket.connect(UDP_PORT, address);
  await once(socket, 'connect');
  return { socket, replies };
}

/** Sends `text` until its echo comes back (a datagram may be lost; each try is a new chance). */
function udpEchoed(
  client: { socket: UdpSocket; replies: string[] },
  text: string,
  what: string,
): Promise<true> {
  return eventually(
    async () => {
      if (client.replies.includes(text.toUpperCase())) return true;
      client.socket.send(text);
      return undefined;
    },
    what,
    60_000,
    250,
  );
}

/**
 * A connection `open` makes that relays `text` to the echo and back (a TLS one once its handshake is done), opened
 * again until one does: a connection no route takes yet is closed.
 */
function relayedConnection<S extends Socket | TLSSocket>(
  open: () => S,
  text: string,
  timeoutMs: number,
): Promise<S> {
  return eventually(
    async () => {
      const socket = open();
      socket.on('error', () => {});
      try {
        if (socket instanceof TLSSocket) await once(socket, 'secureConnect');
        await echoed(socket, text);
        return socket;
      } catch {
        socket.destroy();
        return undefined;
      }
    },
    `a connection relaying '${text}'`,
    timeoutMs,
    500,
  );
}

test('layer 4 on the cluster: TCP, TLS passthrough and UDP served; a listener added while they are open cuts none of them', {
  skip: E2E_SKIP,
}, async (t) => {
  const address = await programmedAddress(cluster, ns, GATEWAY, 120_000);
  // TCP and TLS: connected once the routes are in the proxies (a connection no route takes is closed).
  const tcp = await relayedConnection(() => connect(TCP_PORT, address), 'tcp before', 60_000);
  const tls = await relayedConnection(
    () =>
      tlsConnect({ host: address, port: TLS_PORT, servername: SERVER_NAME, ca: backendCert.certificatePem }),
    'tls before',
    60_000,
  );
  t.after(() => {
    tcp.destroy();
    tls.destroy();
  });
  assert.equal(
    tls.getPeerCertificate().subject.CN,
    SERVER_NAME,
    "the backend's certificate, not the proxy's",
  );
  const udp = await udpClient(address);
  t.after(() => udp.socket.close());
  await udpEchoed(udp, 'udp before', 'a UDP flow relayed');
  // The proxies' pod template names no listener port (the Service alone does), so a listener added changes no pod:
  // a rolled pod would cut these connections at the end of its drain.
  const serviceName = fleetInfraName(`${ns}/${GATEWAY}`);
  const workloads = await call(
    cluster,
    'GET',
    `/apis/apps/v1/deployments?fieldSelector=metadata.name%3D${serviceName}`,
  );
  const containers = asList(asList(workloads.body.items)[0]?.spec?.template?.spec?.containers);
  const podPorts = containers.flatMap((c) => asList(c.ports).map((p) => Number(p.containerPort)));
  assert.ok(podPorts.length > 0, 'the proxy Deployment read');
  for (const port of [TCP_PORT, TLS_PORT, UDP_PORT])
    assert.ok(!podPorts.includes(port), `listener port ${port} in the pod template: ${podPorts.join(', ')}`);
  // Every proxy relays on the native thread: the image's addon loads (Node's sockets would say why it does not).
  const deployment = asList(workloads.body.items)[0]!;
  const labels = Object.entries(asObject(deployment.spec?.selector?.matchLabels));
  const selector = encodeURIComponent(labels.map(([k, v]) => `${k}=${String(v)}`).join(','));
  const podNamespace = String(deployment.metadata?.namespace);
  const pods = await call(
    cluster,
    'GET',
    `/api/v1/namespaces/${podNamespace}/pods?labelSelector=${selector}`,
  );
  assert.ok(asList(pods.body.items).length > 0, 'the proxy pods read');
  for (const pod of asList(pods.body.items)) {
    const container = String(asList(pod.spec?.containers)[0]?.name);
    const path = `/api/v1/namespaces/${podNamespace}/pods/${String(pod.metadata?.name)}/log?container=${container}`;
    const log = await call(cluster, 'GET', path);
    assert.match(
      String(log.body),
      /layer-4 listeners relay on the native thread/,
      `${path}: ${String(log.body).slice(-2000)}`,
    );
  }
  const closed: string[] = [];
  tcp.once('close', () => closed.push('tcp'));
  tls.once('close', () => closed.push('tls'));

  // A new TCP listener and its route: a new port on the Service and in the proxies.
  await layer4Gateway([...LISTENERS, { name: 'later', port: LATER_PORT, protocol: 'TCP' }]);
  await layer4Route('TCPRoute', 'later', 'later', TCP_PORT);
  const later = await relayedConnection(() => connect(LATER_PORT, address), 'later', 120_000);
  later.destroy();
  // The fleet's Service: in the controller's namespace or the Gateway's, by the mode.
  const service = await eventually(async () => {
    const r = await call(cluster, 'GET', `/api/v1/services?fieldSelector=metadata.name%3D${serviceName}`);
    return asList(r.body.items)[0];
  }, "the Gateway's Service");
  const ports = asList(service.spec?.ports).map((p) => Number(p.port));
  assert.ok(ports.includes(LATER_PORT), `the new port on the Service: ${ports.join(', ')}`);

  // The connections and the flow opened before the change: still the same, still served.
  await echoed(tcp, 'tcp after');
  await echoed(tls, 'tls after');
  await udpEchoed(udp, 'udp after', 'the UDP flow after the change');
  assert.deepEqual(closed, [], 'no connection was cut');

  // Its proxy goes: the suites after this need the node's CPU.
  await call(cluster, 'DELETE', `/apis/gateway.networking.k8s.io/v1/namespaces/${ns}/gateways/${GATEWAY}`);
});

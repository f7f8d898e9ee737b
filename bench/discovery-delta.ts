// Discovery cost of one route edit versus an edit of every route, on a fleet of many virtual hosts.
// Run: node --import tsx bench/discovery-delta.ts [virtualHosts=2000] [rounds=20]
import { performance } from 'node:perf_hooks';
import { streamMethod } from '../src/discovery/protocol.js';
import { createDiscoveryServer } from '../src/discovery/server.js';
import {
  fleetTls,
  openRawStream,
  sampleFleet,
  testCertificates,
  virtualHost,
} from '../test/discovery/fixtures.js';
import { median } from './load.js';

const hosts = Number(process.argv[2] ?? 2000);
const rounds = Number(process.argv[3] ?? 20);
const certs = testCertificates();
const server = createDiscoveryServer({
  address: '127.0.0.1:0',
  tls: { caPem: certs.caCertPem, certPem: certs.serverCertPem, keyPem: certs.serverKeyPem },
  auth: { mode: 'mtls' },
});
const { port } = await server.start();

const fleetWith = (prefixFor: (i: number) => string) =>
  sampleFleet(
    'default/bench',
    Array.from({ length: hosts }, (_, i) => virtualHost(`h${i}.example.com`, 'default/a:80', prefixFor(i))),
  );

server.setFleet(fleetWith(() => '/'));
const stream = openRawStream({
  port,
  tls: fleetTls('default/bench'),
  fleet: 'default/bench',
});
const wireBytes = (m: Parameters<ReturnType<typeof streamMethod>['responseSerialize']>[0]) =>
  streamMethod().responseSerialize(m).length;
const full = await stream.next();
console.log(
  `fleet: ${hosts} virtual hosts; full sync on connect: ${full.resources.length} resources, ${wireBytes(full)} bytes`,
);

async function measure(label: string, edit: (round: number) => ReturnType<typeof fleetWith>): Promise<void> {
  const setFleetMs: number[] = [];
  const deliveredMs: number[] = [];
  let bytes = 0;
  let resources = 0;
  for (let round = 1; round <= rounds; round++) {
    const config = edit(round);
    const start = performance.now();
    server.setFleet(config);
    setFleetMs.push(performance.now() - start);
    const message = await stream.next();
    deliveredMs.push(performance.now() - start);
    bytes = wireBytes(message);
    resources = message.resources.length;
  }
  console.log(
    `${label.padEnd(22)} resources sent ${String(resources).padStart(5)}  bytes ${String(bytes).padStart(8)}  ` +
      `setFleet median ${median(setFleetMs).toFixed(2)} ms  setFleet→received median ${median(deliveredMs).toFixed(2)} ms`,
  );
}

await measure('one VirtualHost edited', (round) => fleetWith((i) => (i === 0 ? `/r${round}` : '/')));
// The translator may reuse unchanged resource objects; then only the edited one is serialised again.
const shared = fleetWith(() => '/');
await measure('one edited, rest reused', (round) => ({
  ...shared,
  virtualHosts: shared.virtualHosts.map((v, i) =>
    i === 0 ? virtualHost(v.hostname, 'default/a:80', `/s${round}`) : v,
  ),
}));
await measure('every VirtualHost edited', (round) => fleetWith(() => `/all${round}`));
stream.close();
await server.close();

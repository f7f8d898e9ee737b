// Controller memory against unrelated Secrets, on the real test cluster: Portico installed with its chart, then
// N Opaque Secrets of S KiB created through the API server in a namespace no Gateway uses. The controller caches
// only kubernetes.io/tls Secrets, reduced to the keys it reads, so its memory and its translations should not
// move. Peer in the same run: the bytes of the same Secrets as the API server serves them, which is what a controller
// caching every Secret (Portico before this change) had to keep, at the least (their JSON as served).
// Run: npm run build && npm run toolchain && npm run bench:secrets [-- --secrets 10000 --kib 100 --concurrency 16]
import { request } from 'node:http';
import { parseArgs } from 'node:util';
import { type Cluster, startCluster } from '../test/cluster/harness.js';
import { call } from '../test/cluster/kube-api.js';
import { install, restrictedNamespace } from '../test/e2e/kubernetes/install.js';

const { values } = parseArgs({
  options: {
    secrets: { type: 'string', default: '10000' },
    kib: { type: 'string', default: '100' },
    concurrency: { type: 'string', default: '16' },
    'settle-seconds': { type: 'string', default: '15' },
  },
});
const SECRETS = Number(values.secrets);
const KIB = Number(values.kib);
const CONCURRENCY = Number(values.concurrency);
const SETTLE_MS = Number(values['settle-seconds']) * 1000;
const SYSTEM = 'portico-gateway-system';
const NOISE = 'bench-unrelated-secrets';
const MiB = 1024 * 1024;

interface ControllerSample {
  residentBytes: number;
  heapBytes: number;
  reconciles: number;
}

function scrape(address: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ host: address, port: 19001, path: '/metrics', timeout: 5000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve(body));
    });
    req.on('timeout', () => req.destroy(new Error('metrics: timed out')));
    req.on('error', reject);
    req.end();
  });
}

function sampleValue(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  if (line === undefined) throw new Error(`the controller's /metrics has no ${name}`);
  return Number(line.slice(name.length + 1));
}

async function controllerSample(cluster: Cluster): Promise<ControllerSample> {
  const service = await call(cluster, 'GET', `/api/v1/namespaces/${SYSTEM}/services/portico-gateway-metrics`);
  const text = await scrape(String(service.body.spec?.clusterIP));
  return {
    residentBytes: sampleValue(text, 'process_resident_memory_bytes'),
    heapBytes: sampleValue(text, 'nodejs_heap_size_used_bytes'),
    reconciles: sampleValue(text, 'portico_reconciles_total'),
  };
}

async function createSecrets(cluster: Cluster): Promise<number> {
  const payload = Buffer.alloc(KIB * 1024, 'x').toString('base64');
  const started = performance.now();
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < SECRETS; i = next++) {
      const body = { metadata: { name: `unrelated-${i}` }, type: 'Opaque', data: { blob: payload } };
      const reply = await call(cluster, 'POST', `/api/v1/namespaces/${NOISE}/secrets`, body);
      if (reply.status !== 201) throw new Error(`creating Secret ${i}: ${reply.status}`);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return (performance.now() - started) / 1000;
}

/**
 * What a cache of whole Secrets must hold for them: the bytes of every Secret as the API server serves it, read a
 * page at a time (one list of them all is larger than a JavaScript string can be).
 */
async function wholeSecretBytes(cluster: Cluster): Promise<number> {
  let bytes = 0;
  let next: string | undefined;
  do {
    const page = `/api/v1/secrets?limit=500${next === undefined ? '' : `&continue=${encodeURIComponent(next)}`}`;
    const reply = await call(cluster, 'GET', page);
    if (reply.status !== 200) throw new Error(`listing Secrets: ${reply.status}`);
    for (const item of (reply.body.items ?? []) as unknown[])
      bytes += Buffer.byteLength(JSON.stringify(item));
    const token = (reply.body.metadata as { continue?: string } | undefined)?.continue;
    next = token === undefined || token === '' ? undefined : token;
  } while (next !== undefined);
  return bytes;
}

const settle = () => new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
const mib = (bytes: number) => `${(bytes / MiB).toFixed(1)} MiB`;

const cluster = await startCluster({ log: (line) => console.error(`cluster: ${line}`) });
try {
  await install(cluster);
  await restrictedNamespace(cluster, NOISE);
  await settle();
  const before = await controllerSample(cluster);
  const seconds = await createSecrets(cluster);
  await settle();
  const after = await controllerSample(cluster);
  const peer = await wholeSecretBytes(cluster);
  console.log(
    `${SECRETS} Opaque Secrets of ${KIB} KiB created in ${seconds.toFixed(1)} s (${CONCURRENCY} in flight)`,
  );
  console.log('| | resident | heap | translations while creating |');
  console.log('|---|---|---|---|');
  console.log(`| controller, before | ${mib(before.residentBytes)} | ${mib(before.heapBytes)} | |`);
  console.log(
    `| controller, after | ${mib(after.residentBytes)} | ${mib(after.heapBytes)} | ${after.reconciles - before.reconciles} |`,
  );
  console.log(
    `| peer: every Secret whole, as a cache of them must hold it (JSON as served) | ${mib(peer)} | | |`,
  );
  console.log(
    `controller resident memory grew ${mib(after.residentBytes - before.residentBytes)}, heap ${mib(after.heapBytes - before.heapBytes)}, ` +
      `against ${mib(peer)} of Secrets a whole-Secret cache would hold`,
  );
} finally {
  await cluster.stop();
}

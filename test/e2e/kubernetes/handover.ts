// Availability e2e helpers: continuous traffic that counts every failure, the controller's Lease and pods,
// a recorder of every Programmed condition a Gateway shows, and service account tokens for discovery streams.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { TestContext } from 'node:test';
import type { NodeState } from '../../../src/discovery/server.js';
import { SERVER_CERT_SECRET } from '../../../src/provider/kubernetes/certificate-secrets.js';
import { peerCredential } from '../../../src/provider/kubernetes/data-plane-access.js';
import { leaseName } from '../../../src/provider/kubernetes/leader-election.js';
import { DATA_PLANE_PATH, parseDataPlaneReport } from '../../../src/provider/kubernetes/peer-data-plane.js';
import type { Cluster } from '../../cluster/harness.js';
import { asList, call, eventually, type Loose, watch } from '../../cluster/kube-api.js';
import { httpRequest } from '../../support/http.js';

export const CONTROLLER = 'gateway.portico.io/gatewayclass-controller';
const CONTROLLER_SELECTOR = 'app.kubernetes.io/component=controller';

export interface TrafficTarget {
  address: string;
  port: number;
  host: string;
}

export interface TrafficResult {
  requests: number;
  /** One line per non-2xx reply or connection error, with the target, its phases and when it happened. */
  failures: string[];
  /** Requests answered, but after more than SLOW_MS: each with the phase that took the time. */
  slow: string[];
}

export interface Traffic {
  /** Requests completed so far (to wait until traffic really flows). */
  count(): number;
  stop(): Promise<TrafficResult>;
}

/**
 * The longest a request may take before it counts as lost. Generous: a loaded 2-vCPU node can hold a request
 * for seconds (a SYN retransmitted, a pod descheduled), and a request a stopping proxy accepted is answered
 * within its drain or its connection is cut, so a lost one still fails, and says in which phase.
 */
const LOST_MS = 30_000;
/** Answered later than this: reported with its phases, not failed. */
const SLOW_MS = 5_000;

/** One traffic request's outcome and where its time went. */
interface Timed {
  status: number | undefined;
  error: string | undefined;
  /** ms from sending to the TCP connection being up (undefined: it never was). */
  connectedMs: number | undefined;
  totalMs: number;
}

/**
 * One request on a fresh connection, timed by phase: a connection that is slow to come up is the machine's or
 * kube-proxy's (the proxy answers nothing before accepting); a connection up and an answer slow or missing is the
 * proxy's to explain. The request id lets a lost request be found in the proxies' access logs.
 */
function timedRequest(target: TrafficTarget, requestId: string): Promise<Timed> {
  return new Promise((resolve) => {
    const sent = Date.now();
    let connectedMs: number | undefined;
    const done = (status: number | undefined, error: string | undefined): void =>
      resolve({ status, error, connectedMs, totalMs: Date.now() - sent });
    const req = request(
      {
        host: target.address,
        port: target.port,
        path: '/traffic',
        headers: { host: target.host, 'x-request-id': requestId },
        agent: false,
      },
      (res) => {
        res.resume();
        res.on('end', () => done(res.statusCode, undefined));
        res.on('error', (error) => done(res.statusCode, error.message));
      },
    );
    req.on('socket', (socket) => socket.once('connect', () => (connectedMs = Date.now() - sent)));
    req.on('error', (error) => done(undefined, error.message));
    req.setTimeout(LOST_MS, () => req.destroy(new Error(`no response within ${LOST_MS} ms`)));
    req.end();
  });
}

function phases(t: Timed): string {
  return t.connectedMs === undefined
    ? `never connected (${t.totalMs} ms)`
    : `connected after ${t.connectedMs} ms, ${t.status === undefined ? 'no answer' : `answered ${t.status}`} after ${t.totalMs} ms`;
}

/**
 * One sequential loop per target plus `concurrent` more loops spread over the targets, each request on a fresh
 * connection (through the load-balancer address and kube-proxy to a proxy pod), until stop().
 */
export function startTraffic(targets: TrafficTarget[], concurrent = 2): Traffic {
  let stopped = false;
  let requests = 0;
  const failures: string[] = [];
  const slow: string[] = [];
  const started = Date.now();
  async function loop(target: TrafficTarget, loopId: number): Promise<void> {
    for (let n = 0; !stopped; n++) {
      const sentAt = Date.now() - started;
      const id = `e2e-traffic-${started}-${loopId}-${n}`;
      const t = await timedRequest(target, id);
      const label = `${target.host} via ${target.address}:${target.port} sent at +${sentAt} ms (x-request-id ${id}): ${phases(t)}`;
      if (t.error !== undefined) failures.push(`${label}: ${t.error}`);
      else if (t.status === undefined || t.status < 200 || t.status > 299)
        failures.push(`${label}: HTTP ${t.status}`);
      else if (t.totalMs > SLOW_MS) slow.push(label);
      requests++;
    }
  }
  const loops = [
    ...targets.map((t, i) => loop(t, i)),
    ...Array.from({ length: concurrent }, (_, i) => loop(targets[i % targets.length]!, targets.length + i)),
  ];
  return {
    count: () => requests,
    async stop() {
      stopped = true;
      await Promise.all(loops);
      return { requests, failures, slow };
    },
  };
}

/** Waits until at least `n` more requests have completed, so a disruption really happens under traffic. */
export async function flowing(traffic: Traffic, n = 20): Promise<void> {
  const target = traffic.count() + n;
  await eventually(async () => (traffic.count() >= target ? true : undefined), `${n} requests`, 30_000);
}

/**
 * Runs `disrupt` while traffic flows to the targets (flowing before it and after it), then stops the traffic and
 * returns what it saw. `disrupt` gets the traffic, to check on it midway.
 */
export async function duringTraffic(
  targets: TrafficTarget[],
  disrupt: (traffic: Traffic) => Promise<void>,
): Promise<TrafficResult> {
  const traffic = startTraffic(targets);
  try {
    await flowing(traffic);
    await disrupt(traffic);
    await flowing(traffic);
  } catch (error) {
    await traffic.stop();
    throw error;
  }
  return traffic.stop();
}

/** Traffic ran, and not one request failed. */
export function assertNoFailedRequests(t: TestContext, result: TrafficResult): void {
  t.diagnostic(`${result.requests} requests, ${result.failures.length} failed, ${result.slow.length} slow`);
  // Slow but answered: the machine's load, told apart from a lost request by its phases.
  for (const line of result.slow) t.diagnostic(`slow: ${line}`);
  assert.ok(result.requests > 0, 'traffic ran');
  assert.deepEqual(result.failures, [], `${result.failures.length} of ${result.requests} requests failed`);
}

export interface LeaseSpec {
  holderIdentity?: string;
  leaseTransitions?: number;
  leaseDurationSeconds?: number;
}

export async function lease(cluster: Cluster, namespace: string): Promise<LeaseSpec | undefined> {
  const r = await call(
    cluster,
    'GET',
    `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/${leaseName(CONTROLLER)}`,
  );
  if (r.status !== 200) return undefined;
  return r.body.spec as unknown as LeaseSpec;
}

/** The controller pods that are running and not being deleted, with their readiness. */
export async function controllerPods(
  cluster: Cluster,
  namespace: string,
): Promise<{ name: string; ready: boolean; ip: string }[]> {
  const r = await call(
    cluster,
    'GET',
    `/api/v1/namespaces/${namespace}/pods?labelSelector=${encodeURIComponent(CONTROLLER_SELECTOR)}`,
  );
  return asList(r.body.items)
    .filter((p) => p.metadata?.deletionTimestamp === undefined)
    .map((p) => ({
      name: String(p.metadata?.name),
      ready: asList(p.status?.conditions).some((c) => c.type === 'Ready' && c.status === 'True'),
      ip: String(p.status?.podIP),
    }));
}

/** Waits for `count` ready controller pods and a Lease held by one of them; returns the holder. */
export async function settledLeader(cluster: Cluster, namespace: string, count: number): Promise<string> {
  return eventually(
    async () => {
      const pods = await controllerPods(cluster, namespace);
      if (pods.length !== count || !pods.every((p) => p.ready)) return undefined;
      const holder = (await lease(cluster, namespace))?.holderIdentity;
      return holder !== undefined && pods.some((p) => p.name === holder) ? holder : undefined;
    },
    `${count} ready controller pods and a leader among them`,
    60_000,
  );
}

export interface ProgrammedRecord {
  gateway: string;
  status: string;
  reason: string;
  observedGeneration: number;
  generation: number;
}

export interface ProgrammedRecorder {
  /** Every Programmed condition seen on the watched Gateways since start (status writes included). */
  stop(): ProgrammedRecord[];
}

function programmedRecord(gw: Loose): ProgrammedRecord | undefined {
  const programmed = asList(gw.status?.conditions).find((c) => c.type === 'Programmed');
  if (programmed === undefined) return undefined;
  return {
    gateway: `${String(gw.metadata?.namespace)}/${String(gw.metadata?.name)}`,
    status: String(programmed.status),
    reason: String(programmed.reason),
    observedGeneration: Number(programmed.observedGeneration),
    generation: Number(gw.metadata?.generation),
  };
}

/**
 * Watches Gateways (all namespaces) and records each event's Programmed condition. Reads the stream itself:
 * every event counts, none may be lost between polls.
 */
export async function recordProgrammed(cluster: Cluster): Promise<ProgrammedRecorder> {
  const records: ProgrammedRecord[] = [];
  const stream = await watch(cluster, '/apis/gateway.networking.k8s.io/v1/gateways?watch=true');
  stream.onEvent((event) => {
    const record = programmedRecord(event.object);
    if (record !== undefined) records.push(record);
  });
  return {
    stop() {
      stream.close();
      return records;
    },
  };
}

/** A ready pod of a Gateway's fleet (proxy pods carry the owning Gateway's labels). */
export async function proxyPod(cluster: Cluster, ns: string, gateway: string): Promise<Loose> {
  const selector = `gateway.portico.io/owning-gateway-name=${gateway}`;
  return eventually(
    async () => {
      const r = await call(
        cluster,
        'GET',
        `/api/v1/namespaces/${ns}/pods?labelSelector=${encodeURIComponent(selector)}`,
      );
      return asList(r.body.items).find(
        (p) =>
          p.metadata?.deletionTimestamp === undefined &&
          asList(p.status?.conditions).some((c) => c.type === 'Ready' && c.status === 'True'),
      );
    },
    `a ready proxy pod of ${ns}/${gateway}`,
    30_000,
  );
}

/** A TokenRequest for the pod's ServiceAccount, bound to the pod (as the kubelet's projected token is). */
export async function podToken(cluster: Cluster, pod: Loose, audience: string): Promise<string> {
  const ns = String(pod.metadata?.namespace);
  const sa = String(pod.spec?.serviceAccountName);
  const r = await call(cluster, 'POST', `/api/v1/namespaces/${ns}/serviceaccounts/${sa}/token`, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: {
      audiences: [audience],
      expirationSeconds: 600,
      boundObjectRef: {
        apiVersion: 'v1',
        kind: 'Pod',
        name: String(pod.metadata?.name),
        uid: String(pod.metadata?.uid),
      },
    },
  });
  if (r.status !== 201 && r.status !== 200)
    throw new Error(`TokenRequest: ${r.status} ${JSON.stringify(r.body)}`);
  return String(r.body.status?.token);
}

/** What a replica sends to read a peer's /dataplane (which refuses anyone else off the pod's loopback). */
export async function replicaCredential(cluster: Cluster, namespace: string): Promise<string> {
  const r = await call(cluster, 'GET', `/api/v1/namespaces/${namespace}/secrets/${SERVER_CERT_SECRET}`);
  if (r.status !== 200) throw new Error(`Secret ${namespace}/${SERVER_CERT_SECRET}: ${r.status}`);
  return peerCredential(Buffer.from(String(r.body.data?.['tls.key']), 'base64').toString('utf8'));
}

/** Each live controller replica's /dataplane report: which proxies are connected to it, and what they applied. */
export async function replicaReports(cluster: Cluster, namespace: string): Promise<Map<string, NodeState[]>> {
  const r = await call(
    cluster,
    'GET',
    `/api/v1/namespaces/${namespace}/pods?labelSelector=${encodeURIComponent(CONTROLLER_SELECTOR)}`,
  );
  const out = new Map<string, NodeState[]>();
  const authorization = await replicaCredential(cluster, namespace);
  for (const pod of asList(r.body.items)) {
    const ip = pod.status?.podIP;
    if (pod.metadata?.deletionTimestamp !== undefined || typeof ip !== 'string') continue;
    try {
      const reply = await httpRequest(18001, DATA_PLANE_PATH, {
        address: ip,
        timeoutMs: 5000,
        headers: { authorization },
      });
      if (reply.status === 200) out.set(String(pod.metadata?.name), parseDataPlaneReport(reply.body).nodes);
    } catch {
      // Not listening (yet or any more): it serves no proxy.
    }
  }
  return out;
}

/** Waits until every given proxy pod is connected to a live replica and has applied a config there. */
export async function proxiesConnected(cluster: Cluster, namespace: string, pods: string[]): Promise<void> {
  await eventually(
    async () => {
      const connected = new Set(
        [...(await replicaReports(cluster, namespace)).values()]
          .flat()
          .filter((n) => n.appliedVersion !== undefined)
          .map((n) => n.node),
      );
      return pods.every((p) => connected.has(p)) ? true : undefined;
    },
    `proxies ${pods.join(', ')} connected to a live controller replica`,
    // A proxy whose controller went away retries with a backoff capped at 10 s: a few caps, and the new replica's start.
    70_000,
    500,
  );
}

// Portico installed with the chart's defaults (Controller Namespace Mode, one replica), once for these suites:
// one and several GatewayClasses, merged Gateways, what operators rely on, faults of real components, gRPC,
// status writes the API server refuses or throttles, a fleet shaped by its class's and its Gateway's
// DataPlaneProxy, 253-character Gateway names, and the Gateway API CRD versions it finds (last: it deletes a
// CRD).
import { after, before } from 'node:test';
import type { Cluster } from '../../cluster/harness.js';
import { type ClusterLease, useCluster } from '../../cluster/shared.js';
import { cleanup, E2E_ENABLED, install, namespaceLogs } from './install.js';
import * as controllerNamespace from './suites/controller-namespace.js';
import * as faults from './suites/faults.js';
import * as fleetCertificates from './suites/fleet-certificates.js';
import * as fleetShape from './suites/fleet-shape.js';
import * as grpc from './suites/grpc.js';
import * as longNames from './suites/long-names.js';
import * as merged from './suites/merged.js';
import * as operations from './suites/operations.js';
import * as statusObstacles from './suites/status-obstacles.js';
import * as supportedVersion from './suites/supported-version.js';

let lease: ClusterLease;
let cluster: Cluster;
let system: string;

before(async () => {
  if (!E2E_ENABLED) return;
  lease = await useCluster();
  cluster = lease.cluster;
  system = (await install(cluster)).namespace;
  for (const suite of [
    fleetShape,
    controllerNamespace,
    merged,
    operations,
    faults,
    grpc,
    fleetCertificates,
    longNames,
    statusObstacles,
    supportedVersion,
  ])
    await suite.setup(cluster, system);
});
after(async () => {
  if (!E2E_ENABLED) return;
  // E2E_LOGS=<namespace> prints its pods' logs (e.g. portico-gateway-system) to diagnose a failure.
  if (process.env.E2E_LOGS) console.log(namespaceLogs(cluster, process.env.E2E_LOGS));
  await cleanup(cluster);
  await lease.release();
});

// Portico installed with the chart's defaults (Controller Namespace Mode, one replica), once for these suites:
// one and several GatewayClasses, merged Gateways, what operators rely on, faults of real components, gRPC, the
// limit policies (429, 413), every AccessPolicy mechanism (as in Gateway Namespace Mode), client certificates
// checked against a ClusterTrustBundle, TCP, TLS passthrough and UDP kept open across a listener added, status
// writes the API server refuses or throttles, a fleet shaped by its class's and its Gateway's DataPlaneProxy,
// 253-character Gateway names, a Gateway address's routability and listener filters (over the experimental
// Gateway CRD, put back after), and the Gateway API CRD versions it finds (last: it deletes a CRD).
import { install } from './install.js';
import { kubernetesE2e } from './preamble.js';
import * as access from './suites/access.js';
import * as controllerNamespace from './suites/controller-namespace.js';
import * as experimentalChannel from './suites/experimental-channel.js';
import * as faults from './suites/faults.js';
import * as fleetCertificates from './suites/fleet-certificates.js';
import * as fleetShape from './suites/fleet-shape.js';
import * as grpc from './suites/grpc.js';
import * as layer4 from './suites/layer4.js';
import * as limits from './suites/limits.js';
import * as longNames from './suites/long-names.js';
import * as merged from './suites/merged.js';
import * as operations from './suites/operations.js';
import * as statusObstacles from './suites/status-obstacles.js';
import * as supportedVersion from './suites/supported-version.js';
import * as trustBundles from './suites/trust-bundles.js';

kubernetesE2e(async (cluster) => {
  const system = (await install(cluster)).namespace;
  for (const suite of [
    fleetShape,
    controllerNamespace,
    merged,
    operations,
    faults,
    grpc,
    limits,
    fleetCertificates,
    longNames,
    statusObstacles,
    experimentalChannel,
    access,
    layer4,
    trustBundles,
    supportedVersion,
  ])
    await suite.setup(cluster, system);
});

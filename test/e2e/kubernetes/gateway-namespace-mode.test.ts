// Portico in Gateway Namespace Mode with two controller replicas, once for these suites: infrastructure and
// token authentication in each Gateway's namespace, availability (handover, restart) under traffic, and two
// tenants' isolation while one misbehaves (fleets in each Gateway's namespace, so a namespace quota bites), and a
// fleet shaped by its class's and its Gateway's DataPlaneProxy, 253-character Gateway names, and every
// AccessPolicy mechanism and layer 4 across a listener added (as in Controller Namespace Mode).
import { install } from './install.js';
import { kubernetesE2e } from './preamble.js';
import * as access from './suites/access.js';
import * as availability from './suites/availability.js';
import * as fleetShape from './suites/fleet-shape.js';
import * as gatewayNamespace from './suites/gateway-namespace.js';
import * as layer4 from './suites/layer4.js';
import * as longNames from './suites/long-names.js';
import * as tenantFaults from './suites/tenant-faults.js';

kubernetesE2e(async (cluster) => {
  const release = await install(cluster, {
    namespace: 'portico-gwns',
    set: [
      'config.deployType=GatewayNamespace',
      'controller.replicas=2',
      'controller.podDisruptionBudget.enabled=true',
    ],
  });
  // The shaped fleet first: its pods start while the other suites set up.
  await fleetShape.setup(cluster, release.namespace, 'GatewayNamespace');
  for (const suite of [gatewayNamespace, availability, tenantFaults, access, layer4])
    await suite.setup(cluster, release.namespace);
  await longNames.setup(cluster, release.namespace, 'GatewayNamespace');
});

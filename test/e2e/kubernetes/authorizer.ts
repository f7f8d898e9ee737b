// An HTTP forward-auth service inside the cluster, for listener filters and AccessPolicy externalAuth: a pod of
// the Portico image's Node running a few lines that allow `authorization: Bearer good` (naming the user in
// `x-user`) and refuse anything else with 401.
import type { Cluster } from '../../cluster/harness.js';
import { podService } from './traffic.js';

export const AUTHORIZER_PORT = 9000;

const SCRIPT = `
require('node:http').createServer((req, res) => {
  if (req.headers.authorization === 'Bearer good') res.writeHead(200, { 'x-user': 'good' }).end();
  else res.writeHead(401, { 'www-authenticate': 'Bearer' }).end();
}).listen(${AUTHORIZER_PORT});
`;

/** A Deployment and Service `name` in `ns` answering forward-auth on AUTHORIZER_PORT. */
export function authorizer(cluster: Cluster, ns: string, name: string): Promise<void> {
  const container = { name: 'authz', command: ['node', '-e', SCRIPT] };
  const port = { name: 'http', container: AUTHORIZER_PORT, service: AUTHORIZER_PORT };
  return podService(cluster, ns, name, container, port);
}

// Authorization services inside the cluster, for listener filters and AccessPolicy externalAuth, each a pod of the
// Portico image's Node running a few lines:
// - over HTTP (forward-auth): `authorization: Bearer good` is allowed (naming the user in `x-user`), `Bearer hang`
//   is never answered (a service that hangs), anything else is refused with 401;
// - over gRPC with Envoy's ext_authz v3 (the image's own proto definitions): `Bearer good` is allowed with
//   `x-user: grpc-good` and the credential removed, anything else denied with 403 and a body.
import type { Cluster } from '../../cluster/harness.js';
import { podService } from './traffic.js';

export const AUTHORIZER_PORT = 9000;
export const GRPC_AUTHORIZER_PORT = 9001;

const HTTP_SCRIPT = `
require('node:http').createServer((req, res) => {
  if (req.headers.authorization === 'Bearer hang') return;
  if (req.headers.authorization === 'Bearer good') res.writeHead(200, { 'x-user': 'good' }).end();
  else res.writeHead(401, { 'www-authenticate': 'Bearer' }).end();
}).listen(${AUTHORIZER_PORT});
`;

// ESM from the image's working directory, so '@grpc/grpc-js' resolves in /app/node_modules.
const GRPC_SCRIPT = `
import { Server, ServerCredentials, status } from '@grpc/grpc-js';
import { checkMethod } from '/app/dist/proxy/access/external-grpc.js';
const server = new Server();
server.addService({ Check: checkMethod() }, {
  Check(call, callback) {
    if (call.request.attributes.request.http.headers.authorization === 'Bearer good')
      callback(null, {
        status: { code: 0, message: '' },
        okResponse: {
          headers: [{ header: { key: 'x-user', value: 'grpc-good' }, append: null, appendAction: 0 }],
          headersToRemove: ['authorization'],
          responseHeadersToAdd: [],
        },
      });
    else
      callback(null, {
        status: { code: status.PERMISSION_DENIED, message: 'no' },
        deniedResponse: { status: { code: 403 }, headers: [], body: 'denied by policy' },
      });
  },
});
server.bindAsync('0.0.0.0:${GRPC_AUTHORIZER_PORT}', ServerCredentials.createInsecure(), (error) => {
  if (error) throw error;
});
`;

/** A Deployment and Service `name` in `ns` answering forward-auth on AUTHORIZER_PORT. */
export function authorizer(cluster: Cluster, ns: string, name: string): Promise<void> {
  const container = { name: 'authz', command: ['node', '-e', HTTP_SCRIPT] };
  const port = { name: 'http', container: AUTHORIZER_PORT, service: AUTHORIZER_PORT };
  return podService(cluster, ns, name, container, port);
}

/** A Deployment and Service `name` in `ns` answering ext_authz v3 Check on GRPC_AUTHORIZER_PORT. */
export function grpcAuthorizer(cluster: Cluster, ns: string, name: string): Promise<void> {
  const container = { name: 'authz', command: ['node', '--input-type=module', '-e', GRPC_SCRIPT] };
  const port = { name: 'grpc', container: GRPC_AUTHORIZER_PORT, service: GRPC_AUTHORIZER_PORT };
  return podService(cluster, ns, name, container, port);
}

// A demo Envoy ext_authz v3 service (envoy.service.auth.v3.Authorization/Check) for the ExternalAuth example, with
// the repository's own .proto subset and @grpc/grpc-js: `Authorization: Bearer letmein` passes (the credential
// removed, `x-authz: granted` added upstream); anything else is denied with a 403 and a body.
// Usage, from the repository root: node examples/external-auth/ext-authz-server.mjs [port]   (default 3012)
import { fileURLToPath } from 'node:url';
import { Server, ServerCredentials, status } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';

const port = Number(process.argv[2] ?? 3012);
const definition = loadSync('envoy/service/auth/v3/external_auth.proto', {
  includeDirs: [fileURLToPath(new URL('../../proto/', import.meta.url))],
  longs: Number,
  enums: Number,
  defaults: true,
  oneofs: true,
});
const service = definition['envoy.service.auth.v3.Authorization'];
const header = (key, value) => ({ header: { key, value } });
const server = new Server();
server.addService(service, {
  Check(call, callback) {
    const headers = call.request.attributes.request.http.headers;
    if (headers.authorization === 'Bearer letmein') {
      callback(null, {
        status: { code: status.OK },
        okResponse: { headers: [header('x-authz', 'granted')], headersToRemove: ['authorization'] },
      });
      return;
    }
    callback(null, {
      status: { code: status.PERMISSION_DENIED },
      deniedResponse: {
        status: { code: 403 },
        headers: [header('content-type', 'text/plain')],
        body: 'denied\n',
      },
    });
  },
});
server.bindAsync(`127.0.0.1:${port}`, ServerCredentials.createInsecure(), (error) => {
  if (error) throw error;
  console.log(`ext_authz service on 127.0.0.1:${port}`);
});

// An Envoy ext_authz (v3) gRPC service on loopback for tests: `authorization: Bearer good` is allowed (adding
// `x-authz: granted` and removing the credential), anything else denied with 403 and a body.
import { Server, ServerCredentials, type ServerUnaryCall, type sendUnaryData, status } from '@grpc/grpc-js';
import { type CheckRequest, type CheckResponse, checkMethod } from '../../src/proxy/access/external-grpc.js';

export async function startExtAuthz(t: { after(fn: () => void): void }): Promise<number> {
  const server = new Server();
  server.addService(
    { Check: checkMethod() },
    {
      Check(call: ServerUnaryCall<CheckRequest, CheckResponse>, callback: sendUnaryData<CheckResponse>) {
        const headers = call.request.attributes.request.http.headers;
        if (headers.authorization === 'Bearer good') {
          callback(null, {
            status: { code: 0, message: '' },
            okResponse: {
              headers: [{ header: { key: 'x-authz', value: 'granted' }, append: null, appendAction: 0 }],
              headersToRemove: ['authorization'],
              responseHeadersToAdd: [],
            },
          });
        } else {
          callback(null, {
            status: { code: status.PERMISSION_DENIED, message: 'no' },
            deniedResponse: { status: { code: 403 }, headers: [], body: 'denied by policy' },
          });
        }
      },
    },
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) =>
      e === null ? resolve(p) : reject(e),
    ),
  );
  t.after(() => server.forceShutdown());
  return port;
}

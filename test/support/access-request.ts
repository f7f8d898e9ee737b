// An access check's view of a request (src/proxy/access/request-view.ts) made from plain values, for the access
// steps' unit tests: a GET of `/` from 10.1.2.3 over cleartext unless `over` says otherwise.
import type { AccessRequest } from '../../src/proxy/access/request-view.js';

export function accessRequest(
  over: Partial<AccessRequest> & { headers?: Record<string, string> } = {},
): AccessRequest {
  const headers = over.headers ?? {};
  return {
    method: 'GET',
    path: '/',
    search: '',
    clientAddress: '10.1.2.3',
    serverName: undefined,
    tls: false,
    target: '/',
    host: undefined,
    headerLines: [],
    body: undefined,
    ...over,
    header: (name) => headers[name],
  };
}

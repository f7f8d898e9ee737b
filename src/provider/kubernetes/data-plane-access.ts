// Who may read a replica's /dataplane (every tenant's fleets, pods and errors): a process in the replica's own
// pod (loopback, which `kubectl port-forward` also is), or another replica proving it holds the discovery
// server's private key, which every replica reads from the same Secret. Anyone else is refused.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { isLoopbackHost } from '../../platform/listen-scope.js';
import type { DataPlaneReport } from './peer-data-plane.js';

const SCHEME = 'Portico-Peer';
/** How far a credential's time may be from ours: replicas' clocks differ a little, a replayed one expires. */
const WINDOW_SECONDS = 120;

function mac(keyPem: string, seconds: number): string {
  return createHmac('sha256', keyPem).update(`portico /dataplane peer ${seconds}`).digest('hex');
}

/** The `authorization` value a replica sends to its peers' /dataplane. */
export function peerCredential(keyPem: string, nowMs = Date.now()): string {
  const seconds = Math.floor(nowMs / 1000);
  return `${SCHEME} ${seconds}.${mac(keyPem, seconds)}`;
}

export function isPeerCredential(header: string | undefined, keyPem: string, nowMs = Date.now()): boolean {
  const match = header === undefined ? null : /^Portico-Peer (\d{1,12})\.([0-9a-f]{64})$/.exec(header);
  if (match === null) return false;
  const seconds = Number(match[1]);
  if (Math.abs(nowMs / 1000 - seconds) > WINDOW_SECONDS) return false;
  return timingSafeEqual(Buffer.from(match[2]!, 'hex'), Buffer.from(mac(keyPem, seconds), 'hex'));
}

/** Whether `req` may read /dataplane; `keyPem` is undefined until the server key is read (loopback only then). */
export function mayReadDataPlane(req: IncomingMessage, keyPem: string | undefined): boolean {
  if (isLoopbackHost(req.socket.remoteAddress ?? '')) return true;
  return keyPem !== undefined && isPeerCredential(req.headers.authorization, keyPem);
}

/** The /dataplane route: the report to those who may read it, 403 to anyone else. */
export function dataPlaneRoute(report: () => DataPlaneReport, keyPem: () => string | undefined) {
  return (req: IncomingMessage): { status: number; body: string; type?: string } =>
    mayReadDataPlane(req, keyPem())
      ? { status: 200, body: JSON.stringify(report()), type: 'application/json' }
      : { status: 403, body: 'loopback or controller replicas only\n' };
}

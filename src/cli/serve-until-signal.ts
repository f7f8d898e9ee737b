// Small HTTP servers run by a subcommand (echo, shutdown-manager) listen until SIGTERM or SIGINT, then close.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PorticoError } from '../platform/errors.js';
import { stopSignal } from '../platform/stop-signal.js';

/** Listens (a bind failure is an error naming `what`), calls `onListening`, and resolves after a signal. */
export async function serveUntilSignal(
  server: Server,
  address: { host: string; port: number },
  what: string,
  onListening: (bound: AddressInfo) => void,
): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error) => reject(new PorticoError('E_IO', `${what}: ${error.message}`)));
    server.listen({ host: address.host, port: address.port }, resolve);
  });
  onListening(server.address() as AddressInfo);
  await stopSignal();
  server.close();
  server.closeAllConnections();
}

// How a proxy process ends: SIGTERM (or SIGINT) starts the graceful drain, then every socket is closed.
import { stopSignal } from '../platform/stop-signal.js';
import type { Proxy as PorticoProxy } from './proxy.js';

/** Resolves once a termination signal arrived and the proxy drained and closed; exit 0 afterwards. */
export async function drainOnSignal(proxy: PorticoProxy, onSignal?: () => void): Promise<void> {
  await stopSignal();
  onSignal?.();
  await proxy.drain();
  await proxy.close();
}

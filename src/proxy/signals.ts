// How a proxy process ends: SIGTERM (or SIGINT) starts the graceful drain, then every socket is closed.
import type { Proxy as PorticoProxy } from './proxy.js';

/** Resolves once a termination signal arrived and the proxy drained and closed; exit 0 afterwards. */
export async function drainOnSignal(proxy: PorticoProxy, onSignal?: () => void): Promise<void> {
  await new Promise<void>((resolve) => {
    const stop = (): void => {
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
      resolve();
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  });
  onSignal?.();
  await proxy.drain();
  await proxy.close();
}

// Waiting for a gRPC channel to connect, with a bound: a connection attempt can hang (a SYN to an endpoint that
// just went away, a handshake never answered), and a failed one should be retried on a new channel at once.
import { type Client, connectivityState } from '@grpc/grpc-js';

/**
 * Resolves undefined once the channel is ready, or why not: a failed attempt (refused, handshake rejected) at
 * once, so the retry gets a new channel with certificates read again; a hanging one at the deadline.
 */
export function channelReady(client: Client, timeoutMs: number): Promise<string | undefined> {
  const channel = client.getChannel();
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve) => {
    const check = (): void => {
      const state = channel.getConnectivityState(true);
      if (state === connectivityState.READY) resolve(undefined);
      else if (state === connectivityState.TRANSIENT_FAILURE) resolve('the connection attempt failed');
      else if (state === connectivityState.SHUTDOWN) resolve('the channel was closed');
      else
        channel.watchConnectivityState(state, deadline, (error) => {
          if (error === undefined) check();
          else resolve(`no connection within ${timeoutMs} ms`);
        });
    };
    check();
  });
}

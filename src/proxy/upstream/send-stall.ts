// A request body paused because its upstream took no more bytes waits for the upstream's drain, within a
// deadline (nginx's proxy_send_timeout). Without one, a backend that stops reading holds the body, the client and
// the upstream connection for as long as the route allows: forever on a route without a timeout, as every
// GRPCRoute is by default.
import type { EventEmitter } from 'node:events';
import type { RequestBody } from '../exchange.js';

/** Pauses `body` until `upstream` drains (then `resume`), or calls `onStall` if it has not after `ms`. */
export function awaitUpstreamDrain(
  body: RequestBody,
  upstream: EventEmitter,
  ms: number,
  resume: () => void,
  onStall: () => void,
): void {
  body.pause();
  const timer = setTimeout(onStall, ms);
  upstream.once('drain', () => {
    clearTimeout(timer);
    resume();
  });
}

/** The message of an exchange failed by its send deadline. */
export function sendStallMessage(ms: number): string {
  return `the upstream took no request body bytes for ${ms} ms`;
}

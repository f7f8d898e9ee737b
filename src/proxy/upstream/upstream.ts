// What the handler holds of an upstream, whichever protocol the cluster speaks: it hands one attempt of a request
// to an Upstream and hears the answer as an UpstreamSink; the HTTP/1.1 and h2c clients sit behind it
// (upstream/by-protocol.ts), so retries, mirrors and backend TLS have one place to go.
import type { Endpoint } from '../../ir/fleet-config.js';
import type { ClientRequest, RequestBody } from '../exchange.js';
import type { ForwardPlan } from '../routing/resolve.js';
import type { HeaderMap } from '../wire/headers.js';
import type { UpstreamHead } from '../wire/response-head.js';

/** Why an exchange failed: `reset` (closed or reset before a complete response) may be retried. */
export type UpstreamErrorKind =
  | 'refused'
  | 'reset'
  | 'invalid_response'
  | 'connect_timeout'
  | 'send_timeout'
  | 'error';

export class UpstreamError extends Error {
  constructor(
    message: string,
    readonly kind: UpstreamErrorKind,
  ) {
    super(message);
  }
}

/** Receives one exchange's outcome; exactly one of onUpstreamEnd / onUpstreamError ends it. */
export interface UpstreamSink {
  /**
   * The final response head (interim 1xx responses are skipped). `alone`: no body bytes came with it, yet a body
   * follows; the client should have the head now (a stream may wait long before its first bytes).
   */
  onUpstreamHead(status: number, head: UpstreamHead, alone: boolean): void;
  /** A body chunk, valid only during the call (copy to keep it); return false to stop reading until `exchange.resume()`. */
  onUpstreamData(chunk: Buffer): boolean;
  /**
   * The response is complete; `last`: its final body bytes when they arrived with the end (valid during the
   * call); `trailers`: trailer lines (name, value, ...) when the upstream sent some (HTTP/2 only).
   */
  onUpstreamEnd(last: Buffer | undefined, trailers?: string[]): void;
  onUpstreamError(error: UpstreamError): void;
}

/** What a request handler holds of an exchange under way, whatever the upstream protocol. */
export interface UpstreamCall {
  /** Abandons the exchange: nothing more is reported. */
  cancel(): void;
  /** Reading resumes after the sink returned false from onUpstreamData. */
  resume(): void;
  /** The x-request-id the request went upstream with (the access log's), made on first use. */
  readonly requestId: string | undefined;
}

/** One attempt of a forwarded request, as the handler gives it to an upstream. */
export interface UpstreamAttempt {
  readonly plan: ForwardPlan;
  /** The client's request: its method, raw header lines and framing. */
  readonly request: ClientRequest;
  /** The scheme the client used, for the forwarding headers. */
  readonly proto: 'http' | 'https';
  /** The request headers after request header filters; undefined: none apply (built from the client's lines). */
  readonly headers: HeaderMap | undefined;
  /** The body as sent upstream (buffered first, see BodyGate); null: none. */
  readonly body: RequestBody | null;
  /** The traceparent sent upstream (the proxy's span as the parent); undefined: none of ours. */
  traceparent(): string | undefined;
}

/** The handler's side of an attempt: its sink, which also holds the call. */
export interface AttemptSink extends UpstreamSink {
  /** The attempt's call, given before it is sent: an answer that comes at once (a failure) finds it held. */
  onUpstreamCall(call: UpstreamCall): void;
}

/** Reaches the endpoints of clusters of one protocol. */
export interface Upstream {
  /** Sends `attempt` to `endpoint` (on a pooled connection or stream, when one frees); its answer goes to `sink`. */
  send(endpoint: Endpoint, attempt: UpstreamAttempt, sink: AttemptSink): void;
}

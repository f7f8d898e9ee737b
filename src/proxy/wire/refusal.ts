// Why the proxy will not read what a client sent: the HTTP/1.1 request parser, the chunked decoder and the
// HTTP/2 request check all answer with one of these.

/** The status to answer (then the connection or stream closes) and a reason for logs. */
export interface Refusal {
  status: number;
  reason: string;
}

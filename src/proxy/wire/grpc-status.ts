// The gRPC status a gRPC client gets for an answer the proxy gives itself (gRPC's HTTP-to-status mapping,
// with the proxy's own 504 as DEADLINE_EXCEEDED): a gRPC client reads grpc-status, never an HTTP page.

export const GRPC_DEADLINE_EXCEEDED = 4;
export const GRPC_UNIMPLEMENTED = 12;
export const GRPC_INTERNAL = 13;
export const GRPC_UNAVAILABLE = 14;
export const GRPC_UNKNOWN = 2;

/** The gRPC status for a local HTTP status. */
export function grpcStatusFor(httpStatus: number): number {
  switch (httpStatus) {
    case 404:
      return GRPC_UNIMPLEMENTED;
    case 408:
    case 504:
      return GRPC_DEADLINE_EXCEEDED;
    case 400:
      return GRPC_INTERNAL;
    case 401:
      return 16;
    case 403:
      return 7;
    case 429:
    case 500:
    case 502:
    case 503:
      return GRPC_UNAVAILABLE;
    default:
      return GRPC_UNKNOWN;
  }
}

/** The trailers-only answer's header lines for a local HTTP status (sent with HTTP status 200). */
export function grpcAnswerLines(httpStatus: number): string[] {
  return [
    'content-type',
    'application/grpc',
    'grpc-status',
    String(grpcStatusFor(httpStatus)),
    'grpc-message',
    `portico: HTTP ${httpStatus}`,
  ];
}

/** A request's content-type says gRPC (application/grpc, application/grpc+proto, ...). */
export function isGrpcContentType(value: string | undefined): boolean {
  if (value === undefined) return false;
  return value.startsWith('application/grpc') && !value.startsWith('application/grpc-web');
}

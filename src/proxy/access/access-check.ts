// What the external mechanisms (an authorization service, OIDC) decide about a request (request-view.ts): let it
// pass, with header edits for the upstream request and, for a session, lines for the client's response; or answer
// it in full themselves. external-steps.ts makes their decisions pipeline steps' outcomes.

/** Header edits for the upstream request: `set` replaces every value of a name, `append` adds one more. */
export interface UpstreamHeaderEdits {
  set: [string, string][];
  append: [string, string][];
  /** Names (lower case) removed. */
  remove: string[];
}

/** The check let the request pass. */
export interface AccessAllowed {
  allowed: true;
  upstream: UpstreamHeaderEdits;
  /** Header lines (name, value, ...) added to the client's response (a session cookie). */
  responseLines: string[];
  /** Why it passed although the service did not say so (a fail-open); undefined otherwise. */
  failedOpen?: string;
}

/** Why a request was refused: the outcome label of `portico_proxy_auth_*` metrics and the access log flag. */
export type DenialReason =
  | 'denied'
  | 'error'
  | 'timeout'
  | 'body_too_large'
  | 'login_required'
  | 'callback'
  | 'logout';

/** The check answered the request itself. */
export interface AccessDenied {
  allowed: false;
  reason: DenialReason;
  status: number;
  /** Header lines: name, value, ... (framing headers are the responder's). */
  lines: string[];
  body: Buffer;
}

export type AccessDecision = AccessAllowed | AccessDenied;

export function allowed(
  upstream?: Partial<UpstreamHeaderEdits>,
  responseLines: string[] = [],
): AccessAllowed {
  return {
    allowed: true,
    upstream: { set: upstream?.set ?? [], append: upstream?.append ?? [], remove: upstream?.remove ?? [] },
    responseLines,
  };
}

export function denied(
  reason: DenialReason,
  status: number,
  lines: string[] = [],
  body: Buffer = Buffer.alloc(0),
): AccessDenied {
  return { allowed: false, reason, status, lines, body };
}

/** The values of header `name` (lower case) among header lines. */
export function headerValues(lines: readonly string[], name: string): string[] {
  const values: string[] = [];
  for (let i = 0; i < lines.length; i += 2) {
    if (lines[i]!.toLowerCase() === name) values.push(lines[i + 1]!);
  }
  return values;
}

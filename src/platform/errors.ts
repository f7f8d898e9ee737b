// One error type for everything Portico reports: a stable code to branch on, a message a person can act on.

export type PorticoErrorCode =
  /** A command line that cannot be run: an unknown option, a missing argument, a bad value. */
  | 'E_USAGE'
  /** A YAML file that does not parse. */
  | 'E_YAML_PARSE'
  /** Input that parses but is refused, or names what does not exist. */
  | 'E_VALIDATION'
  /** The controller's configuration, a kubeconfig or an option's value cannot be used. */
  | 'E_CONFIG'
  /** A file or directory that cannot be read or written. */
  | 'E_IO'
  /** Config discovery between controller and proxies cannot start or go on. */
  | 'E_DISCOVERY'
  /** A credential is refused: a token that does not authenticate, or not for this audience or kind of account. */
  | 'E_AUTH'
  /** A fleet config (from discovery or a file) the proxy cannot apply. */
  | 'E_FLEET_CONFIG'
  /** The Kubernetes API answered with an error, or did not answer in time. */
  | 'E_KUBERNETES'
  /** An address the process must bind is bound by another. */
  | 'E_ADDRESS_IN_USE'
  /** A certificate or key that cannot be read or used. */
  | 'E_CERTIFICATE'
  /** Another controller replica's data-plane report cannot be fetched or read. */
  | 'E_PEER_REPORT'
  /** A proxy's worker process could not start or died before it served. */
  | 'E_WORKER'
  /** An object Portico would make exists and belongs to someone else: left alone and reported. */
  | 'E_CONFLICT';

/** The exit status of a command line that cannot be run (as translate documents, and shells and getopt use). */
export const EXIT_USAGE = 2;

/** The exit status of a process that cannot bind an address it must own (EADDRINUSE's number on Linux). */
export const EXIT_ADDRESS_IN_USE = 98;

/** The exit status for an error that ends a command: 1, or a status a supervisor acts on. */
export function exitCodeOf(error: unknown): number {
  if (!isPorticoError(error)) return 1;
  if (error.code === 'E_ADDRESS_IN_USE') return EXIT_ADDRESS_IN_USE;
  return error.code === 'E_USAGE' ? EXIT_USAGE : 1;
}

export class PorticoError extends Error {
  readonly code: PorticoErrorCode;

  constructor(code: PorticoErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PorticoError';
    this.code = code;
  }
}

export function isPorticoError(value: unknown): value is PorticoError {
  return value instanceof PorticoError;
}

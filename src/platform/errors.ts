// One error type for everything Portico reports: a stable code to branch on, a message a person can act on.

export type PorticoErrorCode =
  | 'E_USAGE'
  | 'E_YAML_PARSE'
  | 'E_VALIDATION'
  | 'E_CONFIG'
  | 'E_IO'
  | 'E_DISCOVERY'
  | 'E_AUTH'
  | 'E_FLEET_CONFIG'
  | 'E_KUBERNETES'
  | 'E_ADDRESS_IN_USE';

/** The exit status of a process that cannot bind an address it must own (EADDRINUSE's number on Linux). */
export const EXIT_ADDRESS_IN_USE = 98;

/** The exit status for an error that ends a command: 1, or a status a supervisor acts on. */
export function exitCodeOf(error: unknown): number {
  return isPorticoError(error) && error.code === 'E_ADDRESS_IN_USE' ? EXIT_ADDRESS_IN_USE : 1;
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

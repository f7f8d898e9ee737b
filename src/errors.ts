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
  | 'E_KUBERNETES';

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

// Which local program an image runs: Portico's image runs the built CLI, the echo image an echo server.
import { fileURLToPath } from 'node:url';

export interface ImageRule {
  /** Matches when the image name contains this text. */
  contains: string;
  /** The program and leading arguments (the image's ENTRYPOINT). */
  entrypoint: string[];
}

export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const PORTICO_CLI = fileURLToPath(new URL('../../../dist/cli/main.js', import.meta.url));
export const INLINE_ECHO = fileURLToPath(new URL('./echo-server.mjs', import.meta.url));

/** `echo: 'portico'` maps the echo image to `portico echo` once that subcommand exists. */
export function defaultImageRules(echo: 'inline' | 'portico'): ImageRule[] {
  const echoRule: ImageRule =
    echo === 'portico'
      ? { contains: 'echo', entrypoint: [process.execPath, PORTICO_CLI, 'echo'] }
      : { contains: 'echo', entrypoint: [process.execPath, INLINE_ECHO] };
  return [echoRule, { contains: 'portico', entrypoint: [process.execPath, PORTICO_CLI] }];
}

export function entrypointFor(rules: ImageRule[], image: string): string[] | undefined {
  return rules.find((r) => image.includes(r.contains))?.entrypoint;
}

/**
 * The argv a container runs: `command` replaces the entrypoint (a leading `portico` or `node` maps to the
 * local program), `args` follow.
 */
export function containerArgv(entrypoint: string[], command: string[], args: string[]): string[] {
  if (command.length === 0) return [...entrypoint, ...args];
  const [head = '', ...rest] = command;
  const base = head.split('/').pop() ?? head;
  if (base === 'portico') return [process.execPath, PORTICO_CLI, ...rest, ...args];
  if (base === 'node') return [process.execPath, ...rest, ...args];
  return [...command, ...args];
}

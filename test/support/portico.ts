// Where the built `portico` executable is: end-to-end tests run the real CLI, as users do (`npm test` builds first).
import { fileURLToPath } from 'node:url';

export const PORTICO_MAIN = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

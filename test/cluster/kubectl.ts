// The real kubectl against a simulator, asynchronously: the simulator serves from the test process itself,
// so a blocking spawn would deadlock.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';

export const KUBECTL = '/usr/bin/kubectl';
export const KUBECTL_SKIP: string | false = existsSync(KUBECTL) ? false : 'kubectl is not installed';

export function kubectl(
  kubeconfigPath: string,
  ...args: string[]
): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    execFile(
      KUBECTL,
      ['--kubeconfig', kubeconfigPath, ...args],
      { encoding: 'utf8', timeout: 20_000 },
      (error, out, err) => {
        resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, out, err });
      },
    );
  });
}

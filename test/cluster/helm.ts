// The toolchain's helm against a cluster, run asynchronously: the process that calls it may be generating
// traffic, or running the cluster's load-balancer controller, and must keep answering while helm waits on a
// rollout. Its homes live in the cluster's directory, so nothing of the machine's helm setup is read or written.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { binary } from '../../toolchain/manifest.js';
import type { Cluster } from './harness.js';

export interface HelmOptions {
  /** `capture` (default): stdout is returned and errors carry helm's output; `inherit`: both go to ours. */
  output?: 'capture' | 'inherit';
}

/** Runs `helm ARGS --kubeconfig <cluster's>`; resolves with its stdout, throws with its output on failure. */
export function helm(cluster: Cluster, args: string[], options: HelmOptions = {}): Promise<string> {
  const inherit = options.output === 'inherit';
  const child = spawn(binary(cluster.toolchain, 'helm'), [...args, '--kubeconfig', cluster.kubeconfigPath], {
    stdio: inherit ? 'inherit' : ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      HELM_CACHE_HOME: join(cluster.dir, 'helm/cache'),
      HELM_CONFIG_HOME: join(cluster.dir, 'helm/config'),
      HELM_DATA_HOME: join(cluster.dir, 'helm/data'),
    },
  });
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  child.stdout?.on('data', (c: Buffer) => stdout.push(c));
  child.stderr?.on('data', (c: Buffer) => stderr.push(c));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => {
      const out = Buffer.concat(stdout).toString('utf8');
      if (code === 0) return resolve(out);
      const detail = inherit ? `exit ${code ?? signal}` : Buffer.concat(stderr).toString('utf8') || out;
      reject(new Error(`helm ${args.join(' ')}: ${detail}`));
    });
  });
}

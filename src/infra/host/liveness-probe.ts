// One HTTP liveness probe, as a kubelet does it: a fresh connection, a deadline, 200 means live. A hung process
// (stopped, or an event loop that never turns) still has its sockets accepted by the kernel, so only an answer
// counts, never a connect.
import { formatHostPort } from '../../platform/host-port.js';
import { requestOnce } from './request-once.js';

export interface ProbeTarget {
  host: string;
  port: number;
  path: string;
}

/** Undefined when the target answered 200 in time, else why not. */
export async function probeLiveness(target: ProbeTarget, timeoutMs: number): Promise<string | undefined> {
  const answer = await requestOnce({ ...target, timeoutMs, bodyCap: 200 });
  if (typeof answer === 'string') return answer;
  if (answer.status === 200) return undefined;
  return `${formatHostPort(target)}${target.path}: HTTP ${answer.status}: ${answer.text.trim()}`;
}

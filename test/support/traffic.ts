// Load that runs beside a test while something changes under it: requests back to back until stopped.
import { Agent } from 'node:http';

/**
 * Requests back to back on `lanes` keep-alive connections (an agent of one socket each) and on fresh
 * connections (agent `false`), until stopped. `request` sends one request on the agent it is given. `sent` counts
 * each request once it is answered or has failed; a failure is `status N` for another status than 200, else the
 * error's message.
 */
export function traffic(lanes: number, request: (agent: Agent | false) => Promise<{ status: number }>) {
  let running = true;
  let sent = 0;
  const failures: string[] = [];
  const agents = Array.from({ length: lanes }, () => new Agent({ keepAlive: true, maxSockets: 1 }));
  const loops = [...agents, false as const].map(async (agent) => {
    while (running) {
      try {
        const reply = await request(agent);
        sent++;
        if (reply.status !== 200) failures.push(`status ${reply.status}`);
      } catch (error) {
        sent++;
        failures.push((error as Error).message);
      }
    }
  });
  return {
    get sent() {
      return sent;
    },
    async stop(): Promise<{ sent: number; failures: string[] }> {
      running = false;
      await Promise.all(loops);
      for (const agent of agents) agent.destroy();
      return { sent, failures };
    },
  };
}

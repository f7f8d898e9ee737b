// What the runner counts; a provider shows it (Kubernetes: its Prometheus endpoint) or ignores it.
export interface RunnerMetrics {
  reconciles: number;
  reconcileErrors: number;
  translateSecondsSum: number;
  /** Translations by path: all of it, only the changed routes, or only the statuses again (same lists). */
  translations: { full: number; changedRoutes: number; again: number };
  connectedProxies: number;
  /** fleet → config version currently served. */
  configVersions: Map<string, number>;
}

export function createRunnerMetrics(): RunnerMetrics {
  return {
    reconciles: 0,
    reconcileErrors: 0,
    translateSecondsSum: 0,
    translations: { full: 0, changedRoutes: 0, again: 0 },
    connectedProxies: 0,
    configVersions: new Map(),
  };
}

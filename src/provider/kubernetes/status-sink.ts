// The runner's status sink on Kubernetes: the status subresource, written one object at a time while this
// replica leads; condition times carry over from the object as the informer shows it.
import type { StatusSink } from '../../runner/runner.js';
import { restamp } from '../../runner/status-stamps.js';
import type { ObjectStatus } from '../../translate/index.js';
import type { ResourceWatch } from './resource-watch.js';
import type { StatusWriter } from './status-writer.js';

/** The key informers and infrastructure use: `namespace/name`, or `name` for cluster-scoped kinds. */
const objectKey = (s: ObjectStatus): string =>
  s.namespace === undefined ? s.name : `${s.namespace}/${s.name}`;

/** Statuses go to the status subresource, one by one while this replica still leads. */
export function apiStatusSink(
  resources: ResourceWatch,
  writer: StatusWriter,
  leading: () => boolean,
): StatusSink {
  return {
    shown: (s) => resources.raw(s.kind, objectKey(s)),
    async show(statuses) {
      for (const s of statuses) {
        if (!leading()) return;
        // Compared with the object as seen now: stamped against it, if it changed since the stamping.
        const current = resources.raw(s.translated.kind, objectKey(s.translated));
        const stampAgainst = (shown: unknown) => restamp(s, shown, new Date());
        const status = current === s.shown ? s.stamped : stampAgainst(current?.status);
        await writer.write(status, current, stampAgainst);
      }
    },
  };
}

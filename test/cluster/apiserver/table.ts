// Server-side printing (`Accept: ...;as=Table;g=meta.k8s.io;v=v1`), so `kubectl get` shows the usual columns.
import {
  arrayAt,
  isJsonObject,
  type JsonObject,
  type KubeObject,
  numberAt,
  objectAt,
  stringAt,
} from './object.js';
import type { ResourceType } from './resources.js';

interface Column {
  name: string;
  type: string;
  priority: number;
  cell: (o: KubeObject) => string | number;
}

export function wantsTable(accept: string | undefined): boolean {
  return (accept ?? '').split(',').some((part) => part.includes('as=Table'));
}

/** Kubernetes' short human durations: 45s, 5m10s, 42m, 3h10m, 20h, 3d. */
export function age(timestamp: string | undefined, now = Date.now()): string {
  if (timestamp === undefined) return '<unknown>';
  const s = Math.max(0, Math.floor((now - Date.parse(timestamp)) / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 8) return m % 60 === 0 ? `${h}h` : `${h}h${m % 60}m`;
  if (h < 48) return `${h}h`;
  return `${Math.floor(h / 24)}d`;
}

const name: Column = { name: 'Name', type: 'string', priority: 0, cell: (o) => o.metadata.name ?? '' };
const ageColumn: Column = {
  name: 'Age',
  type: 'string',
  priority: 0,
  cell: (o) => age(o.metadata.creationTimestamp),
};

function podStatus(o: KubeObject): string {
  if (o.metadata.deletionTimestamp !== undefined) return 'Terminating';
  for (const s of arrayAt(o, 'status', 'containerStatuses').filter(isJsonObject)) {
    const reason = stringAt(s, 'state', 'waiting', 'reason');
    if (reason !== undefined) return reason;
  }
  return stringAt(o, 'status', 'phase') ?? 'Pending';
}

function servicePorts(o: KubeObject): string {
  const ports = arrayAt(o, 'spec', 'ports').filter(isJsonObject);
  if (ports.length === 0) return '<none>';
  return ports
    .map((p) => `${p.port}${p.nodePort === undefined ? '' : `:${p.nodePort}`}/${p.protocol ?? 'TCP'}`)
    .join(',');
}

const COLUMNS: Record<string, Column[]> = {
  '/pods': [
    name,
    {
      name: 'Ready',
      type: 'string',
      priority: 0,
      cell: (o) => {
        const s = arrayAt(o, 'status', 'containerStatuses').filter(isJsonObject);
        return `${s.filter((c) => c.ready === true).length}/${arrayAt(o, 'spec', 'containers').length}`;
      },
    },
    { name: 'Status', type: 'string', priority: 0, cell: podStatus },
    {
      name: 'Restarts',
      type: 'string',
      priority: 0,
      cell: (o) =>
        String(
          arrayAt(o, 'status', 'containerStatuses')
            .filter(isJsonObject)
            .reduce((n, c) => n + (numberAt(c, 'restartCount') ?? 0), 0),
        ),
    },
    ageColumn,
    { name: 'IP', type: 'string', priority: 1, cell: (o) => stringAt(o, 'status', 'podIP') ?? '<none>' },
    { name: 'Node', type: 'string', priority: 1, cell: (o) => stringAt(o, 'spec', 'nodeName') ?? '<none>' },
  ],
  'apps/deployments': [
    name,
    {
      name: 'Ready',
      type: 'string',
      priority: 0,
      cell: (o) => `${numberAt(o, 'status', 'readyReplicas') ?? 0}/${numberAt(o, 'spec', 'replicas') ?? 1}`,
    },
    {
      name: 'Up-to-date',
      type: 'integer',
      priority: 0,
      cell: (o) => numberAt(o, 'status', 'updatedReplicas') ?? 0,
    },
    {
      name: 'Available',
      type: 'integer',
      priority: 0,
      cell: (o) => numberAt(o, 'status', 'availableReplicas') ?? 0,
    },
    ageColumn,
  ],
  '/services': [
    name,
    { name: 'Type', type: 'string', priority: 0, cell: (o) => stringAt(o, 'spec', 'type') ?? 'ClusterIP' },
    {
      name: 'Cluster-IP',
      type: 'string',
      priority: 0,
      cell: (o) => stringAt(o, 'spec', 'clusterIP') ?? '<none>',
    },
    {
      name: 'External-IP',
      type: 'string',
      priority: 0,
      cell: (o) => {
        const ips = arrayAt(o, 'status', 'loadBalancer', 'ingress')
          .filter(isJsonObject)
          .map((i) => String(i.ip ?? i.hostname ?? ''));
        if (ips.length > 0) return ips.join(',');
        return stringAt(o, 'spec', 'type') === 'LoadBalancer' ? '<pending>' : '<none>';
      },
    },
    { name: 'Port(s)', type: 'string', priority: 0, cell: servicePorts },
    ageColumn,
  ],
  '/namespaces': [
    name,
    { name: 'Status', type: 'string', priority: 0, cell: (o) => stringAt(o, 'status', 'phase') ?? 'Active' },
    ageColumn,
  ],
};

function rowObject(o: KubeObject, include: string): JsonObject | KubeObject {
  if (include === 'Object') return o;
  if (include === 'None') return {};
  return { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: o.metadata };
}

export function toTable(type: ResourceType, body: JsonObject, includeObject: string | null): JsonObject {
  const columns = COLUMNS[type.storageKey] ?? [name, ageColumn];
  const items = Array.isArray(body.items) ? (body.items as KubeObject[]) : [body as KubeObject];
  const metadata = objectAt(body, 'metadata') ?? {};
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: Array.isArray(body.items)
      ? metadata
      : { resourceVersion: (body as KubeObject).metadata.resourceVersion },
    columnDefinitions: columns.map((c) => ({
      name: c.name,
      type: c.type,
      format: c === name ? 'name' : '',
      description: '',
      priority: c.priority,
    })),
    rows: items.map((o) => ({
      cells: columns.map((c) => c.cell(o)),
      object: rowObject(o, includeObject ?? 'Metadata'),
    })),
  };
}

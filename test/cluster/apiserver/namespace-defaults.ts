// What a real control plane adds to every namespace: the `default` ServiceAccount and `kube-root-ca.crt`.
import type { Lifecycle } from './lifecycle.js';
import { builtinType } from './resources.js';
import { ApiError } from './status.js';

const SA = builtinType('serviceaccounts');
const CM = builtinType('configmaps');

function createIfMissing(action: () => void): void {
  try {
    action();
  } catch (error) {
    if (!(error instanceof ApiError && (error.code === 409 || error.code === 403 || error.code === 404)))
      throw error;
  }
}

export function installNamespaceDefaults(lifecycle: Lifecycle, caPem: string): () => void {
  lifecycle.hooks.onCreate.push((type, object) => {
    if (type.storageKey !== '/namespaces') return;
    object.metadata.labels = {
      ...object.metadata.labels,
      'kubernetes.io/metadata.name': object.metadata.name ?? '',
    };
    object.spec = { finalizers: ['kubernetes'] };
    object.status = { phase: 'Active' };
  });
  return lifecycle.store.subscribe((event) => {
    if (event.storageKey !== '/namespaces' || event.type !== 'ADDED') return;
    const namespace = event.object.metadata.name ?? '';
    setImmediate(() => {
      createIfMissing(() => lifecycle.create(SA, { metadata: { name: 'default', namespace } }));
      createIfMissing(() =>
        lifecycle.create(CM, {
          metadata: { name: 'kube-root-ca.crt', namespace },
          data: { 'ca.crt': caPem },
        }),
      );
    });
  });
}

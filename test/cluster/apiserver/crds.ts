// CustomResourceDefinitions: creating one serves its kinds at once (status Established), deleting one
// deletes its objects.
import type { Lifecycle } from './lifecycle.js';
import { arrayAt, isJsonObject, type KubeObject, objectAt, stringAt } from './object.js';
import type { ResourceType } from './resources.js';
import { invalid } from './status.js';

export function typesOfCrd(crd: KubeObject): ResourceType[] {
  const spec = objectAt(crd, 'spec');
  const names = objectAt(spec, 'names');
  const group = stringAt(spec, 'group') ?? '';
  const plural = stringAt(names, 'plural') ?? '';
  const kind = stringAt(names, 'kind') ?? '';
  return arrayAt(spec, 'versions')
    .filter(isJsonObject)
    .filter((v) => v.served !== false)
    .map((v) => ({
      group,
      version: String(v.name ?? ''),
      resource: plural,
      singular: stringAt(names, 'singular') ?? kind.toLowerCase(),
      kind,
      listKind: stringAt(names, 'listKind') ?? `${kind}List`,
      namespaced: stringAt(spec, 'scope') !== 'Cluster',
      subresources: objectAt(v, 'subresources', 'status') !== undefined ? ['status'] : [],
      shortNames: arrayAt(names, 'shortNames').filter((s): s is string => typeof s === 'string'),
      builtin: false,
      storageKey: `${group}/${plural}`,
    }));
}

const CRD_KEY = 'apiextensions.k8s.io/customresourcedefinitions';

export function installCrdSupport(lifecycle: Lifecycle): void {
  lifecycle.hooks.onCreate.push((type, object) => {
    if (type.storageKey !== CRD_KEY) return;
    const types = typesOfCrd(object);
    const first = types[0];
    const expected = first === undefined ? '' : `${first.resource}.${first.group}`;
    if (first === undefined || object.metadata.name !== expected) {
      throw invalid(lifecycle.target(type, object.metadata.name), [
        `metadata.name: Invalid value: "${object.metadata.name}": must be spec.names.plural+"."+spec.group (${expected}) and serve a version`,
      ]);
    }
    const names = objectAt(object, 'spec', 'names') ?? {};
    const time = object.metadata.creationTimestamp;
    object.status = {
      acceptedNames: names,
      storedVersions: [first.version],
      conditions: [
        {
          type: 'NamesAccepted',
          status: 'True',
          reason: 'NoConflicts',
          message: 'no conflicts found',
          lastTransitionTime: time,
        },
        {
          type: 'Established',
          status: 'True',
          reason: 'InitialNamesAccepted',
          message: 'the initial names have been accepted',
          lastTransitionTime: time,
        },
      ],
    };
  });
  lifecycle.store.subscribe((event) => {
    if (event.storageKey !== CRD_KEY) return;
    const types = typesOfCrd(event.object);
    const key = types[0]?.storageKey;
    if (event.type === 'DELETED') {
      if (key === undefined) return;
      const type = lifecycle.registry.byStorageKey(key);
      lifecycle.registry.removeStorageKey(key);
      if (type === undefined) return;
      setImmediate(() => {
        for (const o of lifecycle.store.list(key)) {
          lifecycle.store.remove(key, o.metadata.namespace ?? '', o.metadata.name ?? '');
        }
      });
      return;
    }
    if (key !== undefined) lifecycle.registry.removeStorageKey(key);
    lifecycle.registry.add(types);
  });
}

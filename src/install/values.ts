// Install values: defaults in one place, and `--set key=value` overrides with errors that name the key.
import { DEFAULT_CONTROLLER_NAME, DEFAULT_CONTROLLER_NAMESPACE } from '../api/controller-config.js';
import { PorticoError } from '../errors.js';

export interface InstallValues {
  namespace: string;
  image: string;
  replicas: number;
  controllerName: string;
  deployType: 'ControllerNamespace' | 'GatewayNamespace';
  watchNamespaces: string[];
  /** matchLabels of a namespace selector (empty: not used). */
  watchNamespaceSelector: Record<string, string>;
}

export const DEFAULT_VALUES: InstallValues = {
  namespace: DEFAULT_CONTROLLER_NAMESPACE,
  image: 'ghcr.io/portico/portico:0.1.0',
  replicas: 1,
  controllerName: DEFAULT_CONTROLLER_NAME,
  deployType: 'ControllerNamespace',
  watchNamespaces: [],
  watchNamespaceSelector: {},
};

export const VALUE_KEYS: Record<string, string> = {
  namespace: 'controller namespace',
  image: 'image of the controller, the certgen Job and the proxies',
  replicas: 'controller replicas (leader election picks the one that writes)',
  'config.controllerName': 'controller name GatewayClasses must name',
  'config.deployType': 'ControllerNamespace or GatewayNamespace',
  'config.watch.namespaces': 'comma-separated namespaces to watch (default: all)',
  'config.watch.namespaceSelector': 'comma-separated k=v labels namespaces must have to be watched',
};

const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

function list(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

export function applySet(values: InstallValues, assignment: string): InstallValues {
  const eq = assignment.indexOf('=');
  if (eq <= 0) throw new PorticoError('E_USAGE', `--set ${assignment}: expected key=value`);
  const key = assignment.slice(0, eq);
  const value = assignment.slice(eq + 1);
  const bad = (why: string) => new PorticoError('E_USAGE', `--set ${key}: ${why}`);
  switch (key) {
    case 'namespace':
      if (!NAME.test(value)) throw bad(`'${value}' is not a valid namespace name`);
      return { ...values, namespace: value };
    case 'image':
      if (value === '') throw bad('must not be empty');
      return { ...values, image: value };
    case 'replicas': {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 1) throw bad('must be a positive integer');
      return { ...values, replicas: n };
    }
    case 'config.controllerName':
      if (value === '') throw bad('must not be empty');
      return { ...values, controllerName: value };
    case 'config.deployType':
      if (value !== 'ControllerNamespace' && value !== 'GatewayNamespace') {
        throw bad('must be ControllerNamespace or GatewayNamespace');
      }
      return { ...values, deployType: value };
    case 'config.watch.namespaces': {
      const names = list(value);
      const wrong = names.find((n) => !NAME.test(n));
      if (wrong !== undefined) throw bad(`'${wrong}' is not a valid namespace name`);
      return { ...values, watchNamespaces: names };
    }
    case 'config.watch.namespaceSelector': {
      const labels: Record<string, string> = {};
      for (const pair of list(value)) {
        const [k, v] = pair.split('=');
        if (k === undefined || k === '' || v === undefined) throw bad(`'${pair}' is not k=v`);
        labels[k] = v;
      }
      return { ...values, watchNamespaceSelector: labels };
    }
    default:
      throw new PorticoError(
        'E_USAGE',
        `--set ${key}: unknown key (known: ${Object.keys(VALUE_KEYS).join(', ')})`,
      );
  }
}

// The controller configuration file (`kind: PorticoGateway`): schema, defaults, validation.
import { type Static, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { isNode, LineCounter } from 'yaml';
import { PorticoError } from '../platform/errors.js';
import { Enum, formatResourceError, LabelSelectorSchema, type ResourceError } from './common.js';
import { PORTICO_GROUP } from './data-plane-proxy.js';
import { type FieldError, formatFieldPath, toFieldErrors } from './schema-errors.js';
import { strictSchema } from './strict-schema.js';
import { parseYamlDocuments } from './yaml-documents.js';

export const DEFAULT_CONTROLLER_NAME = 'gateway.portico.io/gatewayclass-controller';
export const DEFAULT_CONTROLLER_NAMESPACE = 'portico-gateway-system';

// Each field's description is what docs/configuration.md says of it (scripts/config-reference.ts).
export const PorticoGatewayConfigSchema = Type.Object({
  apiVersion: Type.Literal(`${PORTICO_GROUP}/v1alpha1`),
  kind: Type.Literal('PorticoGateway'),
  gateway: Type.Object(
    {
      controllerName: Type.String({
        minLength: 1,
        default: DEFAULT_CONTROLLER_NAME,
        description:
          'The GatewayClass spec.controllerName this controller serves; classes naming another controller, and their Gateways and routes, are left alone and get no status from it.',
      }),
    },
    { default: {} },
  ),
  provider: Type.Object(
    {
      type: Enum(['Kubernetes', 'Standalone'] as const, {
        default: 'Kubernetes',
        description:
          "Where resources come from: a cluster's API server (`portico controller`), or YAML files on this machine (`portico standalone`).",
      }),
      kubernetes: Type.Object(
        {
          deploy: Type.Object(
            {
              type: Enum(['ControllerNamespace', 'GatewayNamespace'] as const, {
                default: 'ControllerNamespace',
                description:
                  "Where each fleet's ServiceAccount, Deployment and Service are created: the controller's own namespace (discovery by mutual TLS), or each Gateway's namespace, owned by the Gateway (discovery by service-account token).",
              }),
            },
            { default: {} },
          ),
          // Absent: every namespace is watched.
          watch: Type.Optional(
            Type.Object(
              {
                type: Enum(['Namespaces', 'NamespaceSelector'] as const, {
                  description: 'How the watched namespaces are chosen: by name, or by their labels.',
                }),
                namespaces: Type.Optional(
                  Type.Array(Type.String({ minLength: 1 }), {
                    description: 'The namespaces watched; required when type is Namespaces.',
                  }),
                ),
                namespaceSelector: Type.Optional(
                  Type.Unsafe<Static<typeof LabelSelectorSchema>>({
                    ...LabelSelectorSchema,
                    description:
                      'Namespaces whose labels match are watched; required when type is NamespaceSelector.',
                  }),
                ),
              },
              {
                description:
                  "Restricts the namespaces whose Gateways, routes and Services are read (absent: all). The controller's own namespace is always watched for its DataPlaneProxy and infrastructure objects.",
              },
            ),
          ),
        },
        { default: {} },
      ),
      standalone: Type.Object(
        {
          paths: Type.Array(Type.String({ minLength: 1 }), {
            default: [],
            description:
              "YAML files and directories read (and watched) in standalone mode, besides those given with -f; a relative path is taken from the configuration file's folder.",
          }),
        },
        { default: {} },
      ),
    },
    { default: {} },
  ),
});
export type PorticoGatewayConfig = Static<typeof PorticoGatewayConfigSchema>;

// A misspelled field is an error naming it, not a default silently used in its place.
const STRICT_SCHEMA = strictSchema(PorticoGatewayConfigSchema);

function ruleErrors(c: PorticoGatewayConfig): FieldError[] {
  const watch = c.provider.kubernetes.watch;
  const at = ['provider', 'kubernetes', 'watch'];
  if (watch?.type === 'Namespaces' && (watch.namespaces === undefined || watch.namespaces.length === 0)) {
    return [{ path: [...at, 'namespaces'], message: 'required when type is Namespaces' }];
  }
  if (watch?.type === 'NamespaceSelector' && watch.namespaceSelector === undefined) {
    return [{ path: [...at, 'namespaceSelector'], message: 'required when type is NamespaceSelector' }];
  }
  return [];
}

export type ControllerConfigResult =
  | { ok: true; config: PorticoGatewayConfig }
  | { ok: false; errors: ResourceError[] };

/** Validates a parsed configuration and applies its defaults; `lineOf` maps a field to its line. */
export function validateControllerConfig(
  raw: unknown,
  file?: string,
  lineOf?: (path: readonly (string | number)[]) => number | undefined,
): ControllerConfigResult {
  const value: unknown = Value.Default(STRICT_SCHEMA, structuredClone(raw ?? {}));
  let errors = toFieldErrors(Value.Errors(STRICT_SCHEMA, value));
  if (errors.length === 0) errors = ruleErrors(value as PorticoGatewayConfig);
  if (errors.length > 0) {
    return {
      ok: false,
      errors: errors.map((e) => {
        const out: ResourceError = {
          object: 'PorticoGateway',
          field: formatFieldPath(e.path),
          message: e.message,
        };
        if (file !== undefined) out.file = file;
        const line = lineOf?.(e.path);
        if (line !== undefined) out.line = line;
        return out;
      }),
    };
  }
  return { ok: true, config: value as PorticoGatewayConfig };
}

/** The configuration with every default applied, as if from an empty file. */
export function defaultControllerConfig(): PorticoGatewayConfig {
  const r = validateControllerConfig({ apiVersion: `${PORTICO_GROUP}/v1alpha1`, kind: 'PorticoGateway' });
  if (!r.ok) throw new Error('default controller configuration is invalid');
  return r.config;
}

/** Parses a configuration file; throws PorticoError(E_CONFIG) listing every problem with file and line. */
export function parseControllerConfig(file: string, text: string): PorticoGatewayConfig {
  const lines = new LineCounter();
  const [parsed, extra] = parseYamlDocuments(text, lines);
  if (parsed !== undefined && !parsed.ok) {
    throw new PorticoError('E_CONFIG', `${file}:${parsed.line}: ${parsed.message}`);
  }
  if (extra !== undefined) {
    throw new PorticoError(
      'E_CONFIG',
      `${file}:${extra.line}: YAML: a configuration file holds one document`,
    );
  }
  const doc = parsed?.doc;
  const lineOf = (path: readonly (string | number)[]): number | undefined => {
    for (let n = path.length; n >= 0 && doc !== undefined; n--) {
      const node = doc.getIn(path.slice(0, n), true);
      if (isNode(node) && node.range) return lines.linePos(node.range[0]).line;
    }
    return undefined;
  };
  const result = validateControllerConfig(parsed?.value, file, lineOf);
  if (!result.ok) throw new PorticoError('E_CONFIG', result.errors.map(formatResourceError).join('\n'));
  return result.config;
}

// `portico translate`: resources in, computed statuses / fleet configs / infrastructure out (offline).

import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { formatResourceError } from '../api/common.js';
import {
  DEFAULT_CONTROLLER_NAMESPACE,
  defaultControllerConfig,
  parseControllerConfig,
} from '../api/controller-config.js';
import { loadPaths } from '../api/load.js';
import { buildSnapshot } from '../api/snapshot.js';
import { fleetObjectList, renderFleetObjects } from '../infra/kubernetes/render.js';
import { PorticoError } from '../platform/errors.js';
import { logToStderr } from '../platform/log-line.js';
import { redact } from '../platform/redact.js';
import { translate } from '../translate/index.js';
import { parseArgsProblem } from './usage.js';

export const HELP = `usage: portico translate -f PATH... [options]

Translates Gateway API resources offline and prints the result.

options:
  -f, --file PATH               file or directory (.yaml, .yml, .json); repeatable
      --config FILE             controller configuration (kind: PorticoGateway)
      --controller-namespace NS namespace of the controller (default ${DEFAULT_CONTROLLER_NAMESPACE})
      --show LIST               comma-separated: status, config, infra (default status)
      --image IMAGE             proxy image for rendered infrastructure (default portico:latest)
  -o, --output FORMAT           yaml (default) or json
  -h, --help                    show this help

Exit status: 0 when everything loaded (even if objects carry error conditions), 1 when some input
could not be loaded (each problem is printed with file and line), 2 on a usage error.`;

const SHOW = ['status', 'config', 'infra'] as const;
type Show = (typeof SHOW)[number];

export async function run(argv: string[]): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    console.error(`portico translate: ${parseArgsProblem(error) ?? (error as Error).message}\n\n${HELP}`);
    return 2;
  }
  const { values } = parsed;
  if (values.help === true) {
    console.log(HELP);
    return 0;
  }
  const files = values.file ?? [];
  if (files.length === 0) {
    console.error(`portico translate: at least one -f PATH is required\n\n${HELP}`);
    return 2;
  }
  const show = (values.show ?? 'status').split(',').map((s) => s.trim());
  const unknown = show.filter((s) => !(SHOW as readonly string[]).includes(s));
  if (unknown.length > 0) {
    console.error(`portico translate: --show: unknown ${unknown.join(', ')} (expected ${SHOW.join(', ')})`);
    return 2;
  }
  const output = values.output ?? 'yaml';
  if (output !== 'yaml' && output !== 'json') {
    console.error(`portico translate: --output must be yaml or json, not ${output}`);
    return 2;
  }
  let config = defaultControllerConfig();
  if (values.config !== undefined) {
    let text: string;
    try {
      text = await readFile(values.config, 'utf8');
    } catch (error) {
      throw new PorticoError(
        'E_IO',
        `cannot read ${values.config}: ${(error as NodeJS.ErrnoException).code}`,
      );
    }
    config = parseControllerConfig(values.config, text);
  }
  const controllerNamespace = values['controller-namespace'] ?? DEFAULT_CONTROLLER_NAMESPACE;
  const loaded = await loadPaths(files);
  for (const e of loaded.errors) logToStderr(formatResourceError(e));
  const objects = loaded.objects.map((o) => o.object);
  const deployType = config.provider.kubernetes.deploy.type;
  const result = translate(buildSnapshot(objects), {
    controllerName: config.gateway.controllerName,
    controllerNamespace,
    deployType,
  });

  const docs: unknown[] = [];
  if (show.includes('status' satisfies Show)) {
    const byId = new Map(result.statuses.map((s) => [`${s.kind}/${s.namespace ?? ''}/${s.name}`, s.status]));
    for (const o of objects) {
      const status = byId.get(`${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`);
      if (status !== undefined) docs.push({ ...o, status });
    }
  }
  if (show.includes('config' satisfies Show)) docs.push(...result.fleets.map(redact));
  if (show.includes('infra' satisfies Show)) {
    const image = values.image ?? 'portico:latest';
    for (const infra of result.infra) {
      const rendered = renderFleetObjects(infra, { image, controllerNamespace, deployType });
      docs.push(...fleetObjectList(rendered));
    }
  }
  if (output === 'json') console.log(JSON.stringify(docs, null, 2));
  else
    console.log(
      docs.map((d) => stringify(d, { lineWidth: 0, aliasDuplicateObjects: false }).trimEnd()).join('\n---\n'),
    );
  return loaded.errors.length > 0 ? 1 : 0;
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      file: { type: 'string', short: 'f', multiple: true },
      config: { type: 'string' },
      'controller-namespace': { type: 'string' },
      show: { type: 'string' },
      image: { type: 'string' },
      output: { type: 'string', short: 'o' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}

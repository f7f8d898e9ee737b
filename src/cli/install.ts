// `portico install --render`: the install manifests as YAML, from defaults and `--set key=value` overrides.
import { parseArgs } from 'node:util';
import { PorticoError } from '../errors.js';
import { formatManifests, renderInstall } from '../install/manifests.js';
import { applySet, DEFAULT_VALUES, VALUE_KEYS } from '../install/values.js';

const width = Math.max(...Object.keys(VALUE_KEYS).map((k) => k.length));
const HELP = `usage: portico install --render [--set key=value]...

Prints every manifest a cluster needs to run Portico (DataPlaneProxy CRD, ServiceAccount, RBAC, configuration,
controller Deployment and Services, certgen Job), for kubectl apply -f -. Gateway API CRDs are not included.

options:
  --render             print the manifests (YAML, one document each)
  --set key=value      override a value (repeatable); keys:
${Object.entries(VALUE_KEYS)
  .map(([k, d]) => `    ${k.padEnd(width)}  ${d}`)
  .join('\n')}
  -h, --help           show this help

defaults: namespace=${DEFAULT_VALUES.namespace} image=${DEFAULT_VALUES.image} config.deployType=${DEFAULT_VALUES.deployType}`;

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      render: { type: 'boolean', default: false },
      set: { type: 'string', multiple: true, default: [] },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) {
    console.log(HELP);
    return 0;
  }
  if (!values.render) throw new PorticoError('E_USAGE', `install: --render is required\n\n${HELP}`);
  const installValues = values.set.reduce(applySet, DEFAULT_VALUES);
  process.stdout.write(formatManifests(renderInstall(installValues)));
  return 0;
}

// The gateway-helm chart's README, generated from Chart.yaml and the comments of values.yaml, so the page a
// user reads beside the packaged chart says what every value does and cannot drift from the values
// (test/charts/chart-readme.test.ts fails when the committed README is not what this writes).
//
//   node --import tsx scripts/chart-readme.ts           # rewrite charts/gateway-helm/README.md
//   node --import tsx scripts/chart-readme.ts --check   # exit 1 when it is out of date
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isMap, isScalar, isSeq, type Node, parse, parseDocument } from 'yaml';

export const CHART_DIR = fileURLToPath(new URL('../charts/gateway-helm', import.meta.url));

export interface ValueRow {
  key: string;
  defaultValue: string;
  description: string;
}

function cleanComment(comment: string | null | undefined): string {
  if (comment === null || comment === undefined) return '';
  return comment
    .split('\n')
    .map((line) => line.trim())
    .join(' ')
    .trim();
}

function shownDefault(node: unknown): string {
  if (isScalar(node)) return JSON.stringify(node.value);
  if (isSeq(node) || isMap(node)) return JSON.stringify(node.toJSON());
  return 'null';
}

/** One row per value: leaves with their default, and sections (maps) that carry a comment of their own. */
export function valueRows(valuesYaml: string): ValueRow[] {
  const doc = parseDocument(valuesYaml);
  const rows: ValueRow[] = [];
  const walk = (node: unknown, prefix: string, inherited: string | null | undefined, top: boolean) => {
    if (!isMap(node)) return;
    node.items.forEach((pair, i) => {
      const keyNode = pair.key as Node;
      const key = `${prefix}${isScalar(keyNode) ? String(keyNode.value) : String(keyNode)}`;
      let comment = keyNode.commentBefore ?? (i === 0 ? inherited : undefined);
      // The file's own header is the first key's comment too: only its last paragraph is about the key.
      if (top && i === 0 && comment) comment = comment.split('\n\n').at(-1);
      const value = pair.value;
      if (isMap(value) && value.items.length > 0) {
        if (comment) rows.push({ key, defaultValue: '', description: cleanComment(comment) });
        walk(value, `${key}.`, value.commentBefore, false);
      } else {
        rows.push({ key, defaultValue: shownDefault(value), description: cleanComment(comment) });
      }
    });
  };
  walk(doc.contents, '', undefined, true);
  return rows;
}

function cell(text: string): string {
  return text.replaceAll('|', '\\|');
}

export function renderChartReadme(chartYaml: string, valuesYaml: string): string {
  const chart = parse(chartYaml) as {
    name: string;
    version: string;
    appVersion: string;
    description: string;
    kubeVersion: string;
  };
  const rows = valueRows(valuesYaml);
  return [
    `# ${chart.name}`,
    '',
    `${chart.description}`,
    '',
    `Chart ${chart.version}, Portico ${chart.appVersion}, Kubernetes ${chart.kubeVersion.replace('-0', '')}.`,
    'This file is generated from `Chart.yaml` and the comments of `values.yaml` by',
    '`node --import tsx scripts/chart-readme.ts`; edit those, not this.',
    '',
    '## Install',
    '',
    'The Gateway API standard CRDs must be installed first, or add `--set crds.gatewayAPI.enabled=true`.',
    '',
    '```sh',
    `helm install portico gateway-helm-${chart.version}.tgz -n portico-gateway-system --create-namespace`,
    '# or from a checkout:',
    'helm install portico charts/gateway-helm -n portico-gateway-system --create-namespace',
    '```',
    '',
    `The packaged chart comes from \`npm run chart\` (\`helm package\`, into \`artifacts/\`). The image it installs is`,
    `\`ghcr.io/portico/portico:${chart.appVersion}\`: build it with \`npm run image\` (no Go, no Docker), push it to a`,
    'registry your cluster pulls from, and set `image.repository` and `image.tag` (the repository README,',
    '"Get the image", says how). The deployment modes, upgrades and uninstall are in the repository README and',
    '`docs/`.',
    '',
    '## Values',
    '',
    '`values.schema.json` rejects an unknown key or a wrong type, naming it.',
    '',
    '| key | default | description |',
    '|---|---|---|',
    ...rows.map(
      (r) =>
        `| \`${r.key}\` | ${r.defaultValue === '' ? '' : `\`${cell(r.defaultValue)}\``} | ${cell(r.description)} |`,
    ),
    '',
  ].join('\n');
}

function main(): void {
  const rendered = renderChartReadme(
    readFileSync(join(CHART_DIR, 'Chart.yaml'), 'utf8'),
    readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8'),
  );
  const target = join(CHART_DIR, 'README.md');
  if (process.argv.includes('--check')) {
    const current = readFileSync(target, 'utf8');
    if (current !== rendered) {
      process.stderr.write(`${target} is out of date: run node --import tsx scripts/chart-readme.ts\n`);
      process.exit(1);
    }
    return;
  }
  writeFileSync(target, rendered);
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) main();

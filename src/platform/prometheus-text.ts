// The Prometheus text exposition format (version 0.0.4), written in one place for the controller, the proxy
// and its primary: a family's HELP and TYPE lines, then its samples, label values escaped.

export type LabelPairs = Readonly<Record<string, string>>;

export type MetricType = 'counter' | 'gauge' | 'histogram' | 'summary';

/** A label value escaped as the format asks: backslash, double quote and line feed. */
export function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** `k="v",...` in the order given, without the braces. */
export function labelList(pairs: LabelPairs): string {
  return Object.entries(pairs)
    .map(([k, v]) => `${k}="${escapeLabelValue(v)}"`)
    .join(',');
}

/** A family's HELP and TYPE lines. */
export function familyHead(name: string, type: MetricType, help: string): string[] {
  return [`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`];
}

/** One sample: `name{labels} value`, without braces when there are no labels. */
export function sampleLine(name: string, pairs: LabelPairs | undefined, value: number): string {
  const list = pairs === undefined ? '' : labelList(pairs);
  return list === '' ? `${name} ${value}` : `${name}{${list}} ${value}`;
}

/** A whole family: its head and one sample per entry of `samples`. */
export function family(
  name: string,
  type: MetricType,
  help: string,
  samples: Iterable<readonly [LabelPairs | undefined, number]>,
): string[] {
  const lines = familyHead(name, type, help);
  for (const [pairs, value] of samples) lines.push(sampleLine(name, pairs, value));
  return lines;
}

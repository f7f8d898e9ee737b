// A strict reader of the Prometheus text exposition format (0.0.4), so e2e tests check the format, not only values.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const TYPES = new Set(['counter', 'gauge', 'summary', 'histogram', 'untyped']);
const SUFFIXES = ['_sum', '_count', '_bucket'];

function parseValue(text: string, where: string): number {
  if (text === '+Inf') return Number.POSITIVE_INFINITY;
  if (text === '-Inf') return Number.NEGATIVE_INFINITY;
  if (text === 'NaN') return Number.NaN;
  const n = Number(text);
  if (text === '' || Number.isNaN(n))
    throw new Error(`${where}: value ${JSON.stringify(text)} is not a number`);
  return n;
}

/** `a="x",b="y\"z"` → {a: 'x', b: 'y"z'}; throws on anything else. */
function parseLabels(text: string, where: string): Record<string, string> {
  const labels: Record<string, string> = {};
  let i = 0;
  while (i < text.length) {
    const eq = text.indexOf('=', i);
    const name = text.slice(i, eq);
    if (eq < 0 || !NAME.test(name) || text[eq + 1] !== '"') throw new Error(`${where}: bad label at ${i}`);
    let value = '';
    let j = eq + 2;
    for (; j < text.length && text[j] !== '"'; j++) {
      if (text[j] === '\\') {
        const next = text[++j];
        value += next === 'n' ? '\n' : next;
      } else value += text[j];
    }
    if (j >= text.length) throw new Error(`${where}: unterminated label value`);
    labels[name] = value;
    i = j + 1;
    if (text[i] === ',') i++;
    else if (i < text.length) throw new Error(`${where}: expected , after label ${name}`);
  }
  return labels;
}

/** Every sample, checking that each belongs to a family declared by a `# TYPE` line before it. */
export function parsePrometheus(text: string): Sample[] {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  text.split('\n').forEach((line, index) => {
    const where = `line ${index + 1}`;
    if (line === '') return;
    if (line.startsWith('#')) {
      const [, keyword, name, rest] = line.match(/^# (HELP|TYPE) (\S+) ?(.*)$/) ?? [];
      if (keyword === undefined || name === undefined || !NAME.test(name)) {
        throw new Error(`${where}: bad comment ${line}`);
      }
      if (keyword === 'TYPE') {
        if (!TYPES.has(rest ?? '')) throw new Error(`${where}: unknown type ${rest}`);
        types.set(name, rest ?? '');
      }
      return;
    }
    const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/);
    if (m === null) throw new Error(`${where}: bad sample ${line}`);
    const name = m[1]!;
    const family = types.has(name)
      ? name
      : SUFFIXES.filter((s) => name.endsWith(s))
          .map((s) => name.slice(0, -s.length))
          .find((f) => types.has(f));
    if (family === undefined) throw new Error(`${where}: ${name} has no # TYPE line before it`);
    samples.push({ name, labels: parseLabels(m[2] ?? '', where), value: parseValue(m[3]!, where) });
  });
  return samples;
}

/** The value of the one sample with this name whose labels include `labels`; undefined if none. */
export function sampleValue(
  samples: Sample[],
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  const found = samples.filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  if (found.length > 1) throw new Error(`${name} ${JSON.stringify(labels)}: ${found.length} samples`);
  return found[0]?.value;
}

// Pure formatting for kubectl-style command output: aligned tables and human ages, as kubectl prints them.

/** kubectl's tabwriter settings: cells padded by 3 spaces, every column but the last at least 6 wide. */
const COLUMN_PADDING = 3;
const COLUMN_MIN_WIDTH = 6;

/** Rows of cells under an upper-case header, columns aligned; the last column is never padded. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const all = [header, ...rows];
  const widths = header.map((_, column) =>
    Math.max(COLUMN_MIN_WIDTH, ...all.map((row) => (row[column] ?? '').length + COLUMN_PADDING)),
  );
  const lines = all.map((row) =>
    header
      .map((_, column) => {
        const cell = row[column] ?? '';
        return column === header.length - 1 ? cell : cell.padEnd(widths[column] ?? 0);
      })
      .join('')
      .trimEnd(),
  );
  return `${lines.join('\n')}\n`;
}

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const YEAR = 365 * DAY;

/** A duration the way kubectl's AGE column shows it: `45s`, `3m12s`, `15m`, `5h`, `2d3h`, `400d`, `3y20d`. */
export function formatAge(ms: number): string {
  const seconds = Math.trunc(ms / SECOND);
  // Up to two seconds in the future is clock skew between machines, shown as now.
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.trunc(ms / MINUTE);
  if (minutes < 10) return withRemainder(minutes, 'm', seconds % 60, 's');
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.trunc(ms / HOUR);
  if (hours < 8) return withRemainder(hours, 'h', minutes % 60, 'm');
  if (hours < 48) return `${hours}h`;
  const days = Math.trunc(ms / DAY);
  if (days < 8) return withRemainder(days, 'd', hours % 24, 'h');
  if (days < 2 * 365) return `${days}d`;
  const years = Math.trunc(ms / YEAR);
  if (years < 8) return withRemainder(years, 'y', days % 365, 'd');
  return `${years}y`;
}

function withRemainder(major: number, majorUnit: string, minor: number, minorUnit: string): string {
  return minor === 0 ? `${major}${majorUnit}` : `${major}${majorUnit}${minor}${minorUnit}`;
}

/** The AGE cell for an RFC 3339 creation timestamp; `<unknown>` when it is absent or unreadable. */
export function ageSince(timestamp: string | undefined, now: number): string {
  if (timestamp === undefined) return '<unknown>';
  const created = Date.parse(timestamp);
  return Number.isNaN(created) ? '<unknown>' : formatAge(now - created);
}

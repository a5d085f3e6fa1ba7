import { LOG_FILTERS, type LogFilterName, type LogLine } from '@bds/client/protocol';

/** The filters of the Logs page, as the URL and GET /logs spell them (empty ones left out). */
export type LogFilters = Partial<Record<LogFilterName, string>>;

/** The filters the page shows a field for (limit is the page's own). */
export const FILTER_FIELDS = LOG_FILTERS.filter((name) => name !== 'limit');

/** The filters a URL's search parameters name. */
export function filtersOf(params: URLSearchParams): LogFilters {
  const out: LogFilters = {};
  for (const name of LOG_FILTERS) {
    const value = params.get(name);
    if (value) out[name] = value;
  }
  return out;
}

/** A `datetime-local` value (local time, minutes) as the ISO instant GET /logs takes, or ''. */
export function isoOfLocal(value: string): string {
  if (!value) return '';
  const ms = new Date(value).getTime();
  return Number.isFinite(ms) ? new Date(ms).toISOString() : '';
}

/** An ISO instant as a `datetime-local` value (local time, minutes). */
export function localOfIso(iso: string | undefined): string {
  if (!iso) return '';
  const d = new Date(iso);
  if (!Number.isFinite(d.getTime())) return '';
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** How a line reads in a request's lines. */
export function lineText(line: LogLine): string {
  if (line.kind !== 'request') return line.text ?? '';
  const code = line.code === undefined ? '' : ` (code ${line.code})`;
  return `${line.method ?? ''} ${line.path ?? ''} → ${line.status}${code} in ${line.ms} ms`;
}

/** Time of a line, as the tables show it: the local time with milliseconds. */
export function timeText(iso: string): string {
  const d = new Date(iso);
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

import { LOG_FILTERS, LOGS_DEFAULT_LIMIT, LOGS_MAX_LIMIT, type LogLine } from '@bds/client/protocol';
import { BdsError, ErrorCode } from '../kernel/errors.ts';

/** The filters of GET /logs, checked (docs/protocol.md#request-logs). */
export interface LogFilter {
  /** Times in ms since the epoch, both inclusive. */
  from?: number;
  to?: number;
  /** An exact status, or a class of them: 4 for `4xx`. */
  status?: number;
  statusClass?: number;
  code?: number;
  /** A part of the path. */
  path?: string;
  className?: string;
  user?: string;
  caller?: string;
  requestId?: string;
  /** Only requests that took longer than this many ms. */
  slowerThan?: number;
  limit: number;
}

const CALLERS = new Set(['master', 'user', 'anonymous']);

function refuse(message: string): never {
  throw new BdsError(ErrorCode.INVALID_QUERY, `Invalid logs filter: ${message}`);
}

function time(name: string, value: string): number {
  const ms = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
  if (!Number.isFinite(ms)) refuse(`${name} must be an ISO date or milliseconds since the epoch.`);
  return ms;
}

function whole(name: string, value: string, min: number, max: number): number {
  if (!/^-?\d+$/.test(value) || Number(value) < min || Number(value) > max) {
    refuse(`${name} must be a whole number from ${min} to ${max}.`);
  }
  return Number(value);
}

const KNOWN = new Set<string>(LOG_FILTERS);

/** The filter a query string asks for; a bad value or an unknown parameter answers 102 and its reason. */
export function parseLogFilter(query: Record<string, unknown>): LogFilter {
  const filter: LogFilter = { limit: LOGS_DEFAULT_LIMIT };
  for (const [name, raw] of Object.entries(query)) {
    if (!KNOWN.has(name)) refuse(`unknown parameter ${name}.`);
    if (typeof raw !== 'string') refuse(`${name} must be a string.`);
    if (raw === '') continue;
    if (raw.length > 200) refuse(`${name} is longer than 200 characters.`);
    switch (name) {
      case 'from':
      case 'to':
        filter[name] = time(name, raw);
        break;
      case 'status': {
        const cls = /^([1-5])xx$/.exec(raw);
        if (cls) filter.statusClass = Number(cls[1]);
        else filter.status = whole('status', raw, 100, 599);
        break;
      }
      case 'code':
        filter.code = whole('code', raw, -1, 1_000_000);
        break;
      case 'slowerThan': {
        const ms = Number(raw);
        if (!/^\d+(\.\d+)?$/.test(raw) || !Number.isFinite(ms)) refuse('slowerThan must be a number of ms.');
        filter.slowerThan = ms;
        break;
      }
      case 'limit':
        filter.limit = whole('limit', raw, 1, LOGS_MAX_LIMIT);
        break;
      case 'caller':
        if (!CALLERS.has(raw)) refuse('caller must be one of master, user, anonymous.');
        filter.caller = raw;
        break;
      default:
        filter[name as 'path' | 'className' | 'user' | 'requestId'] = raw;
    }
  }
  return filter;
}

/** Whether a request line passes every filter given. */
export function matches(line: LogLine, f: LogFilter): boolean {
  const at = Date.parse(line.at);
  if (f.from !== undefined && at < f.from) return false;
  if (f.to !== undefined && at > f.to) return false;
  if (f.status !== undefined && line.status !== f.status) return false;
  if (f.statusClass !== undefined && Math.floor((line.status ?? 0) / 100) !== f.statusClass) return false;
  if (f.code !== undefined && line.code !== f.code) return false;
  if (f.path !== undefined && !line.path?.includes(f.path)) return false;
  if (f.className !== undefined && line.className !== f.className) return false;
  if (f.user !== undefined && line.user !== f.user) return false;
  if (f.caller !== undefined && line.caller !== f.caller) return false;
  if (f.requestId !== undefined && line.requestId !== f.requestId) return false;
  if (f.slowerThan !== undefined && (line.ms ?? 0) <= f.slowerThan) return false;
  return true;
}

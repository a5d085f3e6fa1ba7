/**
 * The logs explorer (docs/protocol.md#request-logs): the request log lines the service keeps, and
 * per request id its lines (the request line, cloud code lines, webhook calls, realtime deliveries).
 */

/** What wrote a line. */
export type LogLineKind = 'request' | 'cloud' | 'webhook' | 'realtime';

export interface LogLine {
  /** Unique among the lines (the instance's prefix and its sequence number). */
  id: string;
  /** When it was written (ISO). */
  at: string;
  /** The request's trace id (`X-Request-Id`). */
  requestId: string;
  kind: LogLineKind;
  /** Request lines: the method, the path without its query, status, protocol code, duration, caller kind, user id. */
  method?: string;
  path?: string;
  status?: number;
  code?: number;
  ms?: number;
  caller?: string;
  user?: string;
  /** The class the path names (`/classes/<C>`, `/schemas/<C>`, `/aggregate/<C>`, `/purge/<C>`). */
  className?: string;
  /** Cloud code, webhook and realtime lines: level and text. */
  level?: 'debug' | 'info' | 'warn' | 'error';
  text?: string;
}

/** `GET /logs`: request lines, newest first. */
export interface LogsAnswer {
  results: LogLine[];
}

/** `GET /logs/<requestId>`: every line of one request, oldest first. */
export interface RequestLinesAnswer {
  requestId: string;
  lines: LogLine[];
}

/** The filters of `GET /logs` (query parameters). */
export const LOG_FILTERS = [
  'from',
  'to',
  'status',
  'code',
  'path',
  'className',
  'user',
  'caller',
  'requestId',
  'slowerThan',
  'limit',
] as const;

export type LogFilterName = (typeof LOG_FILTERS)[number];

/** Most request lines one `GET /logs` answers (and its default). */
export const LOGS_MAX_LIMIT = 1000;
export const LOGS_DEFAULT_LIMIT = 100;

/**
 * The data browser's calls to the bff (`/bff/apps/:appId/...`), typed, over the shell's
 * `apiFetch` (CSRF header, ApiError with the service's `{code, error}`, 401 handling).
 */
import { apiFetch, seg } from '../../../lib/api.ts';
import type { SavedFilter, Where } from '../../../lib/filter.ts';
import { fetchSchemas } from '../../../lib/schemas-api.ts';
import type { FieldSpec, Row, SchemaDoc } from '../../../lib/wire.ts';
import type { ImportRow, Rejected, StreamResult, UnknownColumn } from '../lib/transfer.ts';

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';
const bff = <T>(method: Method, path: string, body?: unknown, signal?: AbortSignal): Promise<T> =>
  apiFetch<T>(path, { method, body, signal });

const app = (appId: string) => `/apps/${seg(appId)}`;
const cls = (appId: string, className: string) => `${app(appId)}/classes/${encodeURIComponent(className)}`;
const schema = (appId: string, className: string) => `${app(appId)}/schemas/${encodeURIComponent(className)}`;

export interface FindParams {
  where?: Where;
  order?: string;
  limit?: number;
  skip?: number;
  keys?: string;
  include?: string;
  count?: boolean;
}

export interface FindResult {
  results: Row[];
  count?: number;
}

function qs(p: FindParams): string {
  const u = new URLSearchParams();
  if (p.where && Object.keys(p.where).length) u.set('where', JSON.stringify(p.where));
  if (p.order) u.set('order', p.order);
  if (p.limit !== undefined) u.set('limit', String(p.limit));
  if (p.skip) u.set('skip', String(p.skip));
  if (p.keys) u.set('keys', p.keys);
  if (p.include) u.set('include', p.include);
  if (p.count) u.set('count', '1');
  const s = u.toString();
  return s ? `?${s}` : '';
}

export interface BulkAnswer {
  results: Array<{ success?: unknown; error?: { code: number; error: string } }>;
  succeeded: number;
  failed: number;
}

export interface ImportStart {
  file: string;
  format: 'csv' | 'json';
  keepObjectIds: boolean;
  addFields?: Record<string, Pick<FieldSpec, 'type' | 'targetClass' | 'dimension'>>;
}

/** The import's audited summary, as the bff recorded it. */
export interface ImportDone {
  created: number;
  rejectedCount: number;
  rejected: Rejected[];
  rows: number;
  /** Fields of the file left out because the class has no such column. */
  unknownColumns: UnknownColumn[];
}

const imports = (appId: string, c: string) => `${cls(appId, c)}/imports`;
const filters = (appId: string, c: string) => `${cls(appId, c)}/filters`;

export const dataApi = {
  schemas: fetchSchemas,
  schema: (appId: string, c: string, signal?: AbortSignal) =>
    bff<SchemaDoc>('GET', schema(appId, c), undefined, signal),
  find: (appId: string, c: string, p: FindParams, signal?: AbortSignal) =>
    bff<FindResult>('GET', `${cls(appId, c)}${qs(p)}`, undefined, signal),
  count: (appId: string, c: string, where?: Where, signal?: AbortSignal) =>
    bff<{ count: number }>('GET', `${cls(appId, c)}/count${qs({ where })}`, undefined, signal),
  get: (appId: string, c: string, id: string, signal?: AbortSignal) =>
    bff<Row>('GET', `${cls(appId, c)}/${encodeURIComponent(id)}`, undefined, signal),
  create: (appId: string, c: string, fields: Record<string, unknown>) =>
    bff<{ objectId: string; createdAt: string }>('POST', cls(appId, c), fields),
  update: (appId: string, c: string, id: string, fields: Record<string, unknown>) =>
    bff<{ updatedAt: string }>('PUT', `${cls(appId, c)}/${encodeURIComponent(id)}`, fields),
  setAcl: (appId: string, c: string, id: string, ACL: Record<string, { read?: boolean; write?: boolean }>) =>
    bff<{ ACL: unknown }>('PUT', `${cls(appId, c)}/${encodeURIComponent(id)}/acl`, { ACL }),
  remove: (appId: string, c: string, id: string) =>
    bff<unknown>('DELETE', `${cls(appId, c)}/${encodeURIComponent(id)}`),
  bulkCreate: (appId: string, c: string, rows: Record<string, unknown>[]) =>
    bff<BulkAnswer>('POST', `${cls(appId, c)}/bulk/create`, { rows }),
  bulkDelete: (appId: string, c: string, objectIds: string[]) =>
    bff<BulkAnswer>('POST', `${cls(appId, c)}/bulk/delete`, { objectIds }),
  bulkUpdate: (appId: string, c: string, objectIds: string[], field: string, value: unknown) =>
    bff<BulkAnswer>('POST', `${cls(appId, c)}/bulk/update`, { objectIds, field, value }),
  createClass: (appId: string, className: string) =>
    bff<SchemaDoc>('POST', `${app(appId)}/schemas`, { className }),
  dropClass: (appId: string, c: string) => bff<unknown>('DELETE', schema(appId, c)),
  addField: (
    appId: string,
    c: string,
    name: string,
    type: string,
    extra: { targetClass?: string; dimension?: number; required?: boolean; defaultValue?: unknown } = {},
  ) => bff<SchemaDoc>('POST', `${schema(appId, c)}/fields`, { name, type, ...extra }),
  deleteField: (appId: string, c: string, name: string) =>
    bff<SchemaDoc>('DELETE', `${schema(appId, c)}/fields/${encodeURIComponent(name)}`),
  addIndex: (appId: string, c: string, name: string, keys: Record<string, 1 | -1>) =>
    bff<SchemaDoc>('POST', `${schema(appId, c)}/indexes`, { name, keys }),
  deleteIndex: (appId: string, c: string, name: string) =>
    bff<SchemaDoc>('DELETE', `${schema(appId, c)}/indexes/${encodeURIComponent(name)}`),
  startImport: (appId: string, c: string, body: ImportStart) =>
    bff<{ importId: string }>('POST', imports(appId, c), body),
  importRows: (appId: string, c: string, importId: string, rows: ImportRow[]) =>
    bff<{ created: number; rejected: Rejected[] }>(
      'POST',
      `${imports(appId, c)}/${encodeURIComponent(importId)}/rows`,
      { rows },
    ),
  finishImport: (appId: string, c: string, importId: string, r: StreamResult) =>
    bff<ImportDone>('POST', `${imports(appId, c)}/${encodeURIComponent(importId)}/finish`, {
      rejected: r.unread,
      rejectedCount: r.unreadCount,
      rows: r.rows,
      unknownColumns: r.unknownColumns,
    }),
  savedFilters: (appId: string, c: string, signal?: AbortSignal) =>
    bff<{ results: SavedFilter[] }>('GET', filters(appId, c), undefined, signal),
  saveFilter: (appId: string, c: string, name: string, where: Where) =>
    bff<SavedFilter>('POST', filters(appId, c), { name, where }),
  shareFilter: (appId: string, c: string, id: number, shared: boolean) =>
    bff<SavedFilter>('PUT', `${filters(appId, c)}/${id}`, { shared }),
  deleteFilter: (appId: string, c: string, id: number) =>
    bff<unknown>('DELETE', `${filters(appId, c)}/${id}`),
  createRole: (appId: string, name: string) =>
    bff<{ objectId: string }>('POST', `${app(appId)}/roles`, { name }),
  createUser: (appId: string, fields: { username: string; password: string; email?: string }) =>
    bff<{ objectId: string }>('POST', `${app(appId)}/users`, fields),
};

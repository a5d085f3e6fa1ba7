import { BATCH_SEGMENT, type BatchItem, type BatchRequest, Client } from '@bds/client';
import { credentialRefusal, ErrorCode, isCredentialField } from '@bds/client/protocol';
import type express from 'express';
import { z } from 'zod';
import type { BffContext } from '../context.ts';
import { type AppScope, appRoute, BffError, bodyOf, hideCredentials, param, parse, unwrap } from './http.ts';
import {
  acl,
  className,
  countQuery,
  findQuery,
  getQuery,
  isFieldName,
  jsonObject,
  objectId,
} from './schemas-edge.ts';

/** Most rows one bulk operation may touch (sent to /batch in segments of 50 by the client). */
export const BULK_MAX = 1000;

const bulkDeleteBody = z.strictObject({ objectIds: z.array(objectId).min(1).max(BULK_MAX) });
const bulkUpdateBody = z.strictObject({
  objectIds: z.array(objectId).min(1).max(BULK_MAX),
  field: z.string().refine((name) => name === 'ACL' || isFieldName(name), 'must be a field name'),
  value: z.unknown(),
});
const bulkCreateBody = z.strictObject({ rows: z.array(jsonObject).min(1).max(BULK_MAX) });
const aclBody = z.strictObject({ ACL: acl });

export const classOf = (s: AppScope): string => parse(className, param(s.req, 'className'), 'class name');
export const idOf = (s: AppScope, name = 'objectId'): string =>
  parse(objectId, param(s.req, name), 'object id');

export const rowTarget = (cls: string, id?: string): string => (id ? `${cls}/${id}` : cls);

/**
 * A change to existing rows never carries a user's or session's credential as a plain value: a
 * password changes only through its own route (users.ts, with the console's confirmation), the
 * others are the service's. Refused with 105 before anything is read or written.
 */
export function refuseCredentialChange(cls: string, fields: Iterable<string>): void {
  for (const field of fields)
    if (isCredentialField(cls, field))
      throw new BffError(400, ErrorCode.INVALID_KEY_NAME, credentialRefusal(field));
}

/** The row as stored (master read), or `null` when it does not exist. */
export async function readRow(
  client: Client,
  cls: string,
  id: string,
): Promise<Record<string, unknown> | null> {
  const res = await client.get<Record<string, unknown>>(cls, id, { useMasterKey: true });
  if (res.success) return res.data;
  if (res.code === ErrorCode.OBJECT_NOT_FOUND) return null;
  return unwrap(res);
}

async function readRows(client: Client, cls: string, ids: string[]): Promise<Record<string, unknown>[]> {
  const res = await client.find<Record<string, unknown>>(
    cls,
    { where: { objectId: { $in: ids } }, limit: ids.length },
    { useMasterKey: true },
  );
  return unwrap(res).results;
}

function summarize(items: BatchItem[]) {
  const failed = items.filter((i) => 'error' in i).length;
  return { results: items, succeeded: items.length - failed, failed };
}

/**
 * Creates `rows` through the service's /batch, one client call per segment of BATCH_SEGMENT, so
 * that rows created by earlier segments are never lost from the answer (and the audit log) when a
 * later segment fails as a whole. A failure of the first segment is the service's error, passed
 * through; a later one marks the rows it did not create with that error.
 */
async function createInSegments(
  client: Client,
  cls: string,
  rows: Record<string, unknown>[],
  done: (items: BatchItem[]) => void,
): Promise<BatchItem[]> {
  const items: BatchItem[] = [];
  try {
    for (let i = 0; i < rows.length; i += BATCH_SEGMENT) {
      const requests: BatchRequest[] = rows
        .slice(i, i + BATCH_SEGMENT)
        .map((body) => ({ method: 'POST', path: Client.pathFor(cls), body }));
      const res = await client.batch(requests, { useMasterKey: true });
      if (!res.success) {
        if (items.length === 0) return unwrap(res);
        const error = { code: res.code, error: res.error };
        while (items.length < rows.length) items.push({ error });
        break;
      }
      items.push(...res.data);
    }
  } catch (err) {
    // Rows created before the failure still get their audit entry.
    if (items.some((item) => 'success' in item)) done(items);
    throw err;
  }
  done(items);
  return items;
}

/** Rows of any class: find, count, get, create, update, delete, ACL, bulk create, delete and update. */
export function registerRowRoutes(router: express.Router, ctx: BffContext): void {
  const base = '/apps/:appId/classes/:className';

  router.get(
    `${base}/count`,
    appRoute(ctx, {}, async (s) => {
      const cls = classOf(s);
      const q = parse(countQuery, s.req.query, 'count query');
      const res = await s.client.find(cls, { where: q.where, limit: 0, count: true }, { useMasterKey: true });
      return { count: unwrap(res).count ?? 0 };
    }),
  );

  router.get(
    base,
    appRoute(ctx, {}, async (s) => {
      const cls = classOf(s);
      const q = parse(findQuery, s.req.query, 'query');
      const res = await s.client.find(cls, q, { useMasterKey: true });
      return hideCredentials(unwrap(res));
    }),
  );

  router.get(
    `${base}/:objectId`,
    appRoute(ctx, {}, async (s) => {
      const q = parse(getQuery, s.req.query, 'query');
      const res = await s.client.get(classOf(s), idOf(s), { ...q, useMasterKey: true });
      return hideCredentials(unwrap(res));
    }),
  );

  router.post(
    base,
    appRoute(ctx, { write: true, status: 201 }, async (s) => {
      const cls = classOf(s);
      const fields = parse(jsonObject, bodyOf(s.req), 'row');
      const created = unwrap(
        await s.client.create<Record<string, unknown>>(cls, fields, { useMasterKey: true }),
      );
      const id = String(created.objectId ?? '');
      const after = (id && (await readRow(s.client, cls, id))) || created;
      s.audit('row.create', rowTarget(cls, id), null, after);
      return hideCredentials(created);
    }),
  );

  router.put(
    `${base}/:objectId`,
    appRoute(ctx, { write: true }, async (s) => {
      const cls = classOf(s);
      const id = idOf(s);
      const fields = parse(jsonObject, bodyOf(s.req), 'row changes');
      refuseCredentialChange(cls, Object.keys(fields));
      const before = await readRow(s.client, cls, id);
      const result = unwrap(await s.client.update(cls, id, fields, { useMasterKey: true }));
      s.audit('row.update', rowTarget(cls, id), before, await readRow(s.client, cls, id));
      return hideCredentials(result);
    }),
  );

  router.delete(
    `${base}/:objectId`,
    appRoute(ctx, { write: true }, async (s) => {
      const cls = classOf(s);
      const id = idOf(s);
      const before = await readRow(s.client, cls, id);
      const result = unwrap(await s.client.destroy(cls, id, { useMasterKey: true }));
      s.audit('row.delete', rowTarget(cls, id), before, null);
      return result;
    }),
  );

  router.put(
    `${base}/:objectId/acl`,
    appRoute(ctx, { write: true }, async (s) => {
      const cls = classOf(s);
      const id = idOf(s);
      const body = parse(aclBody, bodyOf(s.req), 'ACL');
      const before = await readRow(s.client, cls, id);
      unwrap(await s.client.update(cls, id, { ACL: body.ACL }, { useMasterKey: true }));
      const after = await readRow(s.client, cls, id);
      s.audit('row.acl', rowTarget(cls, id), { ACL: before?.ACL ?? null }, { ACL: after?.ACL ?? null });
      return { ACL: after?.ACL ?? body.ACL };
    }),
  );

  router.post(
    `${base}/bulk/create`,
    appRoute(ctx, { write: true }, async (s) => {
      const cls = classOf(s);
      const { rows } = parse(bulkCreateBody, bodyOf(s.req), 'bulk create');
      const items = await createInSegments(s.client, cls, rows, (done) =>
        s.audit('rows.bulkCreate', rowTarget(cls), null, hideCredentials(summarize(done))),
      );
      return hideCredentials(summarize(items));
    }),
  );

  router.post(
    `${base}/bulk/delete`,
    appRoute(ctx, { write: true }, async (s) => {
      const cls = classOf(s);
      const { objectIds } = parse(bulkDeleteBody, bodyOf(s.req), 'bulk delete');
      const before = await readRows(s.client, cls, objectIds);
      const requests: BatchRequest[] = objectIds.map((id) => ({
        method: 'DELETE',
        path: Client.pathFor(cls, id),
      }));
      const items = unwrap(await s.client.batch(requests, { useMasterKey: true }));
      const answer = summarize(items);
      s.audit('rows.bulkDelete', rowTarget(cls), { objectIds, rows: before }, answer);
      return answer;
    }),
  );

  router.post(
    `${base}/bulk/update`,
    appRoute(ctx, { write: true }, async (s) => {
      const cls = classOf(s);
      const { objectIds, field, value } = parse(bulkUpdateBody, bodyOf(s.req), 'bulk update');
      refuseCredentialChange(cls, [field]);
      const before = await readRows(s.client, cls, objectIds);
      const requests: BatchRequest[] = objectIds.map((id) => ({
        method: 'PUT',
        path: Client.pathFor(cls, id),
        body: { [field]: value },
      }));
      const items = unwrap(await s.client.batch(requests, { useMasterKey: true }));
      const answer = summarize(items);
      s.audit(
        'rows.bulkUpdate',
        rowTarget(cls),
        { field, values: Object.fromEntries(before.map((r) => [r.objectId, r[field] ?? null])) },
        { field, value, ...answer },
      );
      return answer;
    }),
  );
}

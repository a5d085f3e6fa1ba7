import type express from 'express';
import { z } from 'zod';
import type { BffContext } from '../context.ts';
import { type AppScope, appRoute, bodyOf, hideCredentials, parse, unwrap } from './http.ts';
import { classOf, idOf, readRow, rowTarget } from './rows.ts';
import { fieldName } from './schemas-edge.ts';

/**
 * The service's row history (docs/protocol.md#row-history, master only) for the console: the
 * versions of a row, the recent changes of a class (deleted rows included), a row as it was at a
 * time, and the two writes, revert and restore.
 *
 *   GET  /apps/:appId/history/:className                    recent changes (user, field, since, until, op, limit, before)
 *   GET  /apps/:appId/history/:className/:objectId          the row's versions, newest first (limit, before)
 *   GET  /apps/:appId/history/:className/:objectId/at       the row at `time`
 *   POST /apps/:appId/history/:className/:objectId/revert   {version}: the row's fields become that version's
 *   POST /apps/:appId/history/:className/:objectId/restore  {version?}: a deleted row comes back (201)
 *
 * Every console user of the app reads; revert and restore are changes (the `write` capability),
 * each an audit entry (`row.revert`, `row.restore`) whose target is the row, as the data browser's
 * edits are. A version's `before` and `after` are rows: they are shown as the data browser shows
 * rows (`hideCredentials` here, then the role's `answerFor` on the way out).
 */

const MAX_TEXT = 200;
const isoTime = z
  .string()
  .refine((v) => !Number.isNaN(Date.parse(v)), 'must be a date/time (ISO 8601)')
  .transform((v) => new Date(v).toISOString());
const limitParam = (max: number) =>
  z
    .string()
    .regex(/^\d+$/, 'must be a positive integer')
    .transform(Number)
    .pipe(z.number().int().min(1).max(max));
const versionId = z.string().min(1).max(MAX_TEXT);
const OPS = ['create', 'update', 'delete', 'revert', 'restore'] as const;

const rowQuery = z.strictObject({ limit: limitParam(1000).optional(), before: versionId.optional() });
const classQuery = z.strictObject({
  user: z.string().min(1).max(MAX_TEXT).optional(),
  field: fieldName.optional(),
  since: isoTime.optional(),
  until: isoTime.optional(),
  op: z.enum(OPS).optional(),
  limit: limitParam(1000).optional(),
  before: versionId.optional(),
});
const atQuery = z.strictObject({ time: isoTime });
const revertBody = z.strictObject({ version: versionId });
const restoreBody = z.strictObject({ version: versionId.optional() });

const historyPath = (cls: string, id?: string, tail = '') =>
  `/history/${encodeURIComponent(cls)}${id ? `/${encodeURIComponent(id)}` : ''}${tail}`;

async function ask(s: AppScope, path: string, query: Record<string, unknown>): Promise<unknown> {
  return hideCredentials(unwrap(await s.client.request('GET', path, { useMasterKey: true, query })));
}

export function registerHistoryRoutes(router: express.Router, ctx: BffContext): void {
  const base = '/apps/:appId/history/:className';

  router.get(
    base,
    appRoute(ctx, {}, async (s) => {
      const cls = classOf(s);
      return ask(s, historyPath(cls), parse(classQuery, s.req.query, 'history query'));
    }),
  );

  router.get(
    `${base}/:objectId`,
    appRoute(ctx, {}, async (s) => {
      const cls = classOf(s);
      const id = idOf(s);
      return ask(s, historyPath(cls, id), parse(rowQuery, s.req.query, 'history query'));
    }),
  );

  router.get(
    `${base}/:objectId/at`,
    appRoute(ctx, {}, async (s) => {
      const cls = classOf(s);
      const id = idOf(s);
      return ask(s, historyPath(cls, id, '/at'), parse(atQuery, s.req.query, 'history query'));
    }),
  );

  router.post(
    `${base}/:objectId/revert`,
    appRoute(ctx, { write: true }, async (s) => {
      const cls = classOf(s);
      const id = idOf(s);
      const body = parse(revertBody, bodyOf(s.req), 'revert');
      const before = await readRow(s.client, cls, id);
      const result = unwrap(
        await s.client.request('POST', historyPath(cls, id, '/revert'), { useMasterKey: true, body }),
      );
      s.audit('row.revert', rowTarget(cls, id), before, await readRow(s.client, cls, id));
      return hideCredentials(result);
    }),
  );

  router.post(
    `${base}/:objectId/restore`,
    appRoute(ctx, { write: true, status: 201 }, async (s) => {
      const cls = classOf(s);
      const id = idOf(s);
      const body = parse(restoreBody, bodyOf(s.req), 'restore');
      const result = unwrap(
        await s.client.request('POST', historyPath(cls, id, '/restore'), { useMasterKey: true, body }),
      );
      s.audit('row.restore', rowTarget(cls, id), null, await readRow(s.client, cls, id));
      return hideCredentials(result);
    }),
  );
}

import { randomBytes } from 'node:crypto';
import { BATCH_SEGMENT, type BatchItem, type BatchRequest, Client } from '@bds/client';
import { ErrorCode, SCHEMA_FIELD_TYPES } from '@bds/client/protocol';
import type express from 'express';
import { z } from 'zod';
import type { BffContext } from '../context.ts';
import { type AppScope, appRoute, BffError, bodyOf, param, parse, unwrap } from './http.ts';
import { BULK_MAX, classOf, rowTarget } from './rows.ts';
import { readSchema } from './schemas.ts';
import { className, fieldName, jsonObject } from './schemas-edge.ts';

/**
 * Imports: a file streamed by the console in chunks of rows, created through the service's /batch
 * in segments of 50, and audited as ONE entry (`rows.import`) with its counts and rejected rows.
 *
 *   POST .../classes/:className/imports                 start (adds the mapped new columns, audited)
 *   POST .../classes/:className/imports/:id/rows        a chunk of up to 1,000 rows with their lines
 *   POST .../classes/:className/imports/:id/finish      the browser's own rejections and the file's
 *                                                       fields the class has no column for; writes
 *                                                       the entry
 *
 * An import nobody finishes is finished by the bff after IMPORT_IDLE_MS without a call (marked
 * abandoned), so rows created by an import are never left out of the audit log.
 */

export const IMPORT_IDLE_MS = 10 * 60_000;
/** Rejected rows kept (and audited) per import; the count is always exact. */
export const IMPORT_REJECTED_KEPT = 1000;
/** Segments of 50 sent to the service side by side: the service works while the next one travels. */
const SEGMENT_CONCURRENCY = 2;

const line = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER);
/** Vector dimensions the service takes. */
export const VECTOR_DIMENSION_MAX = 4096;
const fieldSpec = z
  .strictObject({
    type: z.enum(SCHEMA_FIELD_TYPES),
    targetClass: className.optional(),
    dimension: z.number().int().min(1).max(VECTOR_DIMENSION_MAX).optional(),
  })
  .refine((f) => (f.type === 'Pointer' || f.type === 'Relation') === (f.targetClass !== undefined), {
    message: 'targetClass is required for Pointer and Relation fields, and only for them',
  })
  .refine((f) => (f.type === 'Vector') === (f.dimension !== undefined), {
    message: 'dimension is required for Vector fields, and only for them',
  });
const startBody = z.strictObject({
  file: z.string().min(1).max(300),
  format: z.enum(['csv', 'json']),
  keepObjectIds: z.boolean(),
  /** New columns from the mapping step, added before the first row. */
  addFields: z.record(fieldName, fieldSpec).optional(),
});
const rowsBody = z.strictObject({
  rows: z
    .array(z.strictObject({ line, fields: jsonObject }))
    .min(1)
    .max(BULK_MAX),
});
const rejection = z.strictObject({ line, reason: z.string().max(2000) });
/** Unknown columns reported per import (the console cuts names and the list to these). */
export const IMPORT_UNKNOWN_KEPT = 100;
const unknownColumn = z.strictObject({
  name: z.string().min(1).max(200),
  line,
  rows: z.number().int().min(1),
});
const finishBody = z.strictObject({
  /** Rows the browser could not read (bad CSV cells, JSON entries that are not objects). */
  rejected: z.array(rejection).max(IMPORT_REJECTED_KEPT),
  rejectedCount: z.number().int().min(0),
  /** Rows read from the file, sent or not. */
  rows: z.number().int().min(0),
  /**
   * Fields of the file the class has no column for, left out of the rows (JSON fields first seen
   * after the part of the file the mapping step read): in the summary and the audit entry.
   */
  unknownColumns: z.array(unknownColumn).max(IMPORT_UNKNOWN_KEPT).optional(),
});

export interface Rejection {
  line: number;
  reason: string;
}

interface Import {
  id: string;
  user: string;
  appId: string;
  className: string;
  file: string;
  format: 'csv' | 'json';
  keepObjectIds: boolean;
  addedFields: string[];
  created: number;
  rejected: Rejection[];
  rejectedCount: number;
  startedAt: string;
  timer: ReturnType<typeof setTimeout>;
  /** Records the one audit entry; called once. */
  audit(after: unknown): void;
}

/** The same text the console shows for an error answer. */
const reasonOf = (e: { code: number; error: string }) => `Error ${e.code}: ${e.error}`;

function keepRejected(imp: Import, list: Rejection[], count = list.length): void {
  imp.rejectedCount += count;
  for (const r of list) if (imp.rejected.length < IMPORT_REJECTED_KEPT) imp.rejected.push(r);
}

/**
 * Sends creates to /batch, SEGMENT_CONCURRENCY segments of BATCH_SEGMENT at a time. A segment the
 * service refuses as a whole marks its own rows with that error; the others stand.
 */
async function createRows(
  s: AppScope,
  cls: string,
  rows: Array<{ line: number; fields: Record<string, unknown> }>,
): Promise<{ created: number; rejected: Rejection[] }> {
  const segments: Array<typeof rows> = [];
  for (let i = 0; i < rows.length; i += BATCH_SEGMENT) segments.push(rows.slice(i, i + BATCH_SEGMENT));
  let created = 0;
  const rejected: Rejection[] = [];
  let next = 0;
  const worker = async () => {
    while (next < segments.length) {
      const segment = segments[next++]!;
      const requests: BatchRequest[] = segment.map((r) => ({
        method: 'POST',
        path: Client.pathFor(cls),
        body: r.fields,
      }));
      const res = await s.client.batch(requests, { useMasterKey: true });
      const items: BatchItem[] = res.success
        ? res.data
        : segment.map(() => ({ error: { code: res.code, error: res.error } }));
      items.forEach((item, i) => {
        if ('success' in item) created++;
        else rejected.push({ line: segment[i]!.line, reason: reasonOf(item.error) });
      });
    }
  };
  await Promise.all(Array.from({ length: Math.min(SEGMENT_CONCURRENCY, segments.length) }, worker));
  return { created, rejected };
}

export function registerImportRoutes(router: express.Router, ctx: BffContext): void {
  const base = '/apps/:appId/classes/:className/imports';
  const open = new Map<string, Import>();

  const finish = (imp: Import, extra: Record<string, unknown>) => {
    clearTimeout(imp.timer);
    open.delete(imp.id);
    const rejected = [...imp.rejected].sort((a, b) => a.line - b.line);
    const summary = {
      file: imp.file,
      format: imp.format,
      keepObjectIds: imp.keepObjectIds,
      addedFields: imp.addedFields,
      created: imp.created,
      rejectedCount: imp.rejectedCount,
      rejected,
      unknownColumns: [] as unknown[],
      startedAt: imp.startedAt,
      ...extra,
    };
    imp.audit(summary);
    return summary;
  };
  const touch = (imp: Import) => {
    clearTimeout(imp.timer);
    imp.timer = setTimeout(() => finish(imp, { abandoned: true }), IMPORT_IDLE_MS);
    imp.timer.unref?.();
  };
  const importOf = (s: AppScope, cls: string): Import => {
    const imp = open.get(param(s.req, 'importId'));
    // Another user's (or app's, or class's) import is as unknown as a finished one.
    if (!imp || imp.user !== s.user.username || imp.appId !== s.appId || imp.className !== cls)
      throw new BffError(
        404,
        ErrorCode.OBJECT_NOT_FOUND,
        'No such import in progress (finished or expired).',
      );
    return imp;
  };

  router.post(
    base,
    appRoute(ctx, { write: true, status: 201 }, async (s) => {
      const cls = classOf(s);
      const body = parse(startBody, bodyOf(s.req), 'import');
      const addFields = body.addFields ?? {};
      const names = Object.keys(addFields);
      if (names.length > 0) {
        const before = await readSchema(s.client, cls);
        const doc = unwrap(
          await s.client.request<{ fields: Record<string, unknown> }>(
            'PUT',
            `/schemas/${encodeURIComponent(cls)}`,
            { useMasterKey: true, body: { fields: addFields } },
          ),
        );
        for (const name of names)
          s.audit(
            'schema.addField',
            `${cls}.${name}`,
            before?.fields[name] ?? null,
            doc.fields[name] ?? null,
          );
      }
      const imp: Import = {
        id: randomBytes(12).toString('base64url'),
        user: s.user.username,
        appId: s.appId,
        className: cls,
        file: body.file,
        format: body.format,
        keepObjectIds: body.keepObjectIds,
        addedFields: names,
        created: 0,
        rejected: [],
        rejectedCount: 0,
        startedAt: new Date().toISOString(),
        timer: setTimeout(() => undefined, 0),
        audit: (after) => s.audit('rows.import', rowTarget(cls), null, after),
      };
      open.set(imp.id, imp);
      touch(imp);
      return { importId: imp.id };
    }),
  );

  router.post(
    `${base}/:importId/rows`,
    appRoute(ctx, { write: true }, async (s) => {
      const cls = classOf(s);
      const imp = importOf(s, cls);
      const { rows } = parse(rowsBody, bodyOf(s.req), 'import rows');
      touch(imp);
      if (!imp.keepObjectIds) for (const r of rows) delete r.fields.objectId;
      const answer = await createRows(s, cls, rows);
      imp.created += answer.created;
      keepRejected(imp, answer.rejected);
      touch(imp);
      return answer;
    }),
  );

  router.post(
    `${base}/:importId/finish`,
    appRoute(ctx, { write: true }, async (s) => {
      const cls = classOf(s);
      const imp = importOf(s, cls);
      const body = parse(finishBody, bodyOf(s.req), 'import summary');
      if (body.rejectedCount < body.rejected.length)
        throw new BffError(
          400,
          ErrorCode.INVALID_JSON,
          'Invalid import summary: rejectedCount is below the rows listed.',
        );
      keepRejected(imp, body.rejected, body.rejectedCount);
      return finish(imp, { rows: body.rows, unknownColumns: body.unknownColumns ?? [] });
    }),
  );
}

import type { Client } from '@bds/client';
import { ErrorCode, INDEX_NAME_PATTERN, SCHEMA_FIELD_TYPES } from '@bds/client/protocol';
import type express from 'express';
import { z } from 'zod';
import type { BffContext } from '../context.ts';
import { type AppScope, appRoute, bodyOf, param, parse, unwrap } from './http.ts';
import { classOf } from './rows.ts';
import { className, fieldName, jsonObject } from './schemas-edge.ts';

const dimension = z.number().int().min(1).max(16_000);
/** A field's `required` and `defaultValue`: the service checks the default against the type. */
const fieldOptions = { required: z.boolean().optional(), defaultValue: z.unknown().optional() };
const fieldSpec = z
  .strictObject({
    type: z.enum(SCHEMA_FIELD_TYPES),
    targetClass: className.optional(),
    dimension: dimension.optional(),
    ...fieldOptions,
  })
  .refine((f) => (f.type === 'Vector') === (f.dimension !== undefined), {
    message: 'dimension is required for Vector fields, and only for them',
  })
  .refine((f) => (f.type === 'Pointer' || f.type === 'Relation') === (f.targetClass !== undefined), {
    message: 'targetClass is required for Pointer and Relation fields, and only for them',
  });
const indexSpec = z
  .record(fieldName, z.union([z.literal(1), z.literal(-1)]))
  .refine((v) => Object.keys(v).length > 0, { message: 'an index needs at least one field' });
/** The protocol's index name; the length cap is the bff's own bound on what it forwards. */
const indexName = z
  .string()
  .refine((name) => name.length <= 120 && INDEX_NAME_PATTERN.test(name), 'must be an index name');
const clp = jsonObject;

const createClassBody = z.strictObject({
  className,
  fields: z.record(fieldName, fieldSpec).optional(),
  classLevelPermissions: clp.optional(),
  indexes: z.record(indexName, indexSpec).optional(),
});
const addFieldBody = z.strictObject({
  name: fieldName,
  type: z.enum(SCHEMA_FIELD_TYPES),
  targetClass: className.optional(),
  dimension: dimension.optional(),
  ...fieldOptions,
});
const addIndexBody = z.strictObject({ name: indexName, keys: indexSpec });
const clpBody = z.strictObject({ classLevelPermissions: clp });

type SchemaDoc = {
  className: string;
  fields: Record<string, unknown>;
  classLevelPermissions: Record<string, unknown>;
  indexes?: Record<string, unknown>;
  /** The service's cheap row estimate (GET /schemas, master only). */
  estimatedCount?: number;
};

export async function readSchema(client: Client, cls: string): Promise<SchemaDoc | null> {
  const res = await client.request<SchemaDoc>('GET', `/schemas/${encodeURIComponent(cls)}`, {
    useMasterKey: true,
  });
  if (res.success) return res.data;
  if (
    res.code === ErrorCode.INVALID_CLASS_NAME ||
    res.status === 400 ||
    res.code === ErrorCode.OBJECT_NOT_FOUND
  )
    return null;
  return unwrap(res);
}

async function changeSchema(s: AppScope, cls: string, body: Record<string, unknown>): Promise<SchemaDoc> {
  return unwrap(
    await s.client.request<SchemaDoc>('PUT', `/schemas/${encodeURIComponent(cls)}`, {
      useMasterKey: true,
      body,
    }),
  );
}

/** Classes whose estimate is above this get the estimate in the list (countExact false), not a COUNT. */
export const EXACT_COUNT_LIMIT = 100_000;

/** How many class counts the schema list runs at the same time. */
export const COUNT_CONCURRENCY = 4;

/** `Promise.all(items.map(fn))` with at most `limit` calls of `fn` in flight; answers keep their order. */
export async function mapConcurrent<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (!failed && next < items.length) {
      const i = next++;
      try {
        out[i] = await fn(items[i] as T, i);
      } catch (err) {
        failed = true;
        throw err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return out;
}

/** Classes and schemas: list (with row counts), get, create, fields, indexes, CLP, delete. */
export function registerSchemaRoutes(router: express.Router, ctx: BffContext): void {
  const base = '/apps/:appId/schemas';

  router.get(
    base,
    appRoute(ctx, {}, async (s) => {
      const list = unwrap(
        await s.client.request<{ results: SchemaDoc[] }>('GET', '/schemas', { useMasterKey: true }),
      ).results;
      // Large classes answer the service's cheap estimate; the rest are counted exactly, side by
      // side, a few at a time. The exact count of a large class is on demand (.../count).
      const results = await mapConcurrent(list, COUNT_CONCURRENCY, async (doc) => {
        const estimate = doc.estimatedCount;
        if (typeof estimate === 'number' && estimate > EXACT_COUNT_LIMIT) {
          return { ...doc, indexes: doc.indexes ?? {}, count: estimate, countExact: false };
        }
        const res = await s.client.find(doc.className, { limit: 0, count: true }, { useMasterKey: true });
        const count = res.success ? (res.data.count ?? 0) : null;
        return { ...doc, indexes: doc.indexes ?? {}, count, countExact: count !== null };
      });
      return { results };
    }),
  );

  router.get(
    `${base}/:className`,
    appRoute(ctx, {}, async (s) => {
      const cls = classOf(s);
      return unwrap(
        await s.client.request('GET', `/schemas/${encodeURIComponent(cls)}`, { useMasterKey: true }),
      );
    }),
  );

  router.post(
    base,
    appRoute(ctx, { write: true, status: 201 }, async (s) => {
      const body = parse(createClassBody, bodyOf(s.req), 'class');
      const doc = unwrap(
        await s.client.request<SchemaDoc>('POST', `/schemas/${encodeURIComponent(body.className)}`, {
          useMasterKey: true,
          body,
        }),
      );
      s.audit('schema.create', body.className, null, doc);
      return doc;
    }),
  );

  router.delete(
    `${base}/:className`,
    appRoute(ctx, { write: true }, async (s) => {
      const cls = classOf(s);
      const before = await readSchema(s.client, cls);
      unwrap(await s.client.request('DELETE', `/schemas/${encodeURIComponent(cls)}`, { useMasterKey: true }));
      s.audit('schema.delete', cls, before, null);
      return {};
    }),
  );

  router.post(
    `${base}/:className/fields`,
    appRoute(ctx, { write: true, status: 201 }, async (s) => {
      const cls = classOf(s);
      const { name, ...spec } = parse(addFieldBody, bodyOf(s.req), 'field');
      parse(fieldSpec, spec, 'field');
      const before = await readSchema(s.client, cls);
      const doc = await changeSchema(s, cls, { fields: { [name]: spec } });
      s.audit('schema.addField', `${cls}.${name}`, before?.fields[name] ?? null, doc.fields[name] ?? null);
      return doc;
    }),
  );

  router.delete(
    `${base}/:className/fields/:fieldName`,
    appRoute(ctx, { write: true }, async (s) => {
      const cls = classOf(s);
      const name = parse(fieldName, param(s.req, 'fieldName'), 'field name');
      const before = await readSchema(s.client, cls);
      const doc = await changeSchema(s, cls, { fields: { [name]: { __op: 'Delete' } } });
      s.audit('schema.deleteField', `${cls}.${name}`, before?.fields[name] ?? null, null);
      return doc;
    }),
  );

  router.post(
    `${base}/:className/indexes`,
    appRoute(ctx, { write: true, status: 201 }, async (s) => {
      const cls = classOf(s);
      const { name, keys } = parse(addIndexBody, bodyOf(s.req), 'index');
      const doc = await changeSchema(s, cls, { indexes: { [name]: keys } });
      s.audit('schema.addIndex', `${cls}.${name}`, null, doc.indexes?.[name] ?? keys);
      return doc;
    }),
  );

  router.delete(
    `${base}/:className/indexes/:indexName`,
    appRoute(ctx, { write: true }, async (s) => {
      const cls = classOf(s);
      const name = parse(indexName, param(s.req, 'indexName'), 'index name');
      const before = await readSchema(s.client, cls);
      const doc = await changeSchema(s, cls, { indexes: { [name]: { __op: 'Delete' } } });
      s.audit('schema.deleteIndex', `${cls}.${name}`, before?.indexes?.[name] ?? null, null);
      return doc;
    }),
  );

  router.put(
    `${base}/:className/clp`,
    appRoute(ctx, { write: true }, async (s) => {
      const cls = classOf(s);
      const body = parse(clpBody, bodyOf(s.req), 'class-level permissions');
      const before = await readSchema(s.client, cls);
      const doc = await changeSchema(s, cls, { classLevelPermissions: body.classLevelPermissions });
      s.audit('schema.clp', cls, before?.classLevelPermissions ?? null, doc.classLevelPermissions);
      return doc;
    }),
  );
}

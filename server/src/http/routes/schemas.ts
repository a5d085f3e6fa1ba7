import { demandMaster } from '../../data/authorize.ts';
import type { Data } from '../../data/data.ts';
import { BdsError, ErrorCode } from '../../kernel/errors.ts';
import { MATCH_ALL } from '../../kernel/query.ts';
import type { ClassSchema } from '../../kernel/schema.ts';
import { classNotFound, listedClass, schemaDocument } from '../../schema/registry.ts';
import type { ApiRequest, Router } from '../router.ts';

function requireMaster(req: ApiRequest): void {
  demandMaster(req.ctx.caller, 'schemaRead');
}

function bodyObject(req: ApiRequest): Record<string, unknown> {
  // No body is an empty document; a JSON null is not a document.
  const body = req.body === undefined ? {} : req.body;
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new BdsError(ErrorCode.INVALID_JSON, 'The schema document must be a JSON object.');
  }
  return body as Record<string, unknown>;
}

/** The classes GET /schemas lists (schema/registry.ts `listedClass`), GET /openapi.json too. */
export async function listedSchemas(data: Data): Promise<ClassSchema[]> {
  const { schemas, store } = data.core;
  /** Whether a class holds a row (any row: the master key's view). */
  const holdsRows = async (schema: ClassSchema) =>
    (await store.find(schema, { where: MATCH_ALL, order: [], limit: 1, skip: 0 }, schemas.lookup)).length > 0;
  const all = schemas.all();
  const listed = await Promise.all(all.map((s) => listedClass(s.className, () => holdsRows(s))));
  return all.filter((_, i) => listed[i]);
}

/** /schemas: master-only class schema management. */
export function registerSchemaRoutes(router: Router, data: Data): void {
  const { schemas, store } = data.core;
  const { writes } = data;
  /** The schema document plus `estimatedCount`: a cheap row estimate (see StorageAdapter.estimateCount). */
  const withEstimate = async (schema: ClassSchema) => ({
    ...schemaDocument(schema),
    estimatedCount: await store.estimateCount(schema),
  });
  router.add('GET', '/schemas', async (req) => {
    requireMaster(req);
    return { body: { results: await Promise.all((await listedSchemas(data)).map(withEstimate)) } };
  });
  router.add('GET', '/schemas/:className', async (req) => {
    requireMaster(req);
    const schema = schemas.get(req.params.className!);
    if (!schema) throw classNotFound(req.params.className!);
    return { body: await withEstimate(schema) };
  });
  router.add('POST', '/schemas', async (req) => {
    requireMaster(req);
    const body = bodyObject(req);
    if (typeof body.className !== 'string') {
      throw new BdsError(ErrorCode.INVALID_CLASS_NAME, 'POST /schemas needs a className.');
    }
    return { body: schemaDocument(await writes.createClass(req.ctx, body.className, body)) };
  });
  router.add('POST', '/schemas/:className', async (req) => {
    requireMaster(req);
    return {
      body: schemaDocument(await writes.createClass(req.ctx, req.params.className!, bodyObject(req))),
    };
  });
  router.add('PUT', '/schemas/:className', async (req) => {
    requireMaster(req);
    return {
      body: schemaDocument(await writes.updateClass(req.ctx, req.params.className!, bodyObject(req))),
    };
  });
  router.add('DELETE', '/schemas/:className', async (req) => {
    requireMaster(req);
    await writes.deleteClass(req.ctx, req.params.className!);
    return { body: {} };
  });
  router.add('DELETE', '/purge/:className', async (req) => {
    requireMaster(req);
    await writes.purge(req.ctx, req.params.className!);
    return { body: {} };
  });
}

import type { Core } from '../../data/core.ts';
import { BdsError, ErrorCode, masterKeyRequired } from '../../errors.ts';
import { checkClassName, classNotFound, schemaDocument } from '../../schema/registry.ts';
import type { ClassSchema } from '../../schema/types.ts';
import type { ApiRequest, Router } from '../router.ts';

function requireMaster(req: ApiRequest): void {
  if (!req.auth.isMaster) throw masterKeyRequired();
}

function bodyObject(req: ApiRequest): Record<string, unknown> {
  const body = req.body ?? {};
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw new BdsError(ErrorCode.INVALID_JSON, 'The schema document must be a JSON object.');
  }
  return body as Record<string, unknown>;
}

/** /schemas: master-only class schema management. */
export function registerSchemaRoutes(router: Router, core: Core): void {
  const { schemas, store } = core;
  /** The schema document plus `estimatedCount`: a cheap row estimate (see StorageAdapter.estimateCount). */
  const withEstimate = async (schema: ClassSchema) => ({
    ...schemaDocument(schema),
    estimatedCount: await store.estimateCount(schema),
  });
  router.add('GET', '/schemas', async (req) => {
    requireMaster(req);
    return { body: { results: await Promise.all(schemas.all().map(withEstimate)) } };
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
    return { body: schemaDocument(await schemas.createFromDocument(body.className, body)) };
  });
  router.add('POST', '/schemas/:className', async (req) => {
    requireMaster(req);
    return { body: schemaDocument(await schemas.createFromDocument(req.params.className!, bodyObject(req))) };
  });
  router.add('PUT', '/schemas/:className', async (req) => {
    requireMaster(req);
    return { body: schemaDocument(await schemas.updateFromDocument(req.params.className!, bodyObject(req))) };
  });
  router.add('DELETE', '/schemas/:className', async (req) => {
    requireMaster(req);
    const className = req.params.className!;
    checkClassName(className);
    const schema = schemas.get(className);
    if (schema) {
      const rows = await store.count(
        schema,
        { where: { type: 'and', children: [] }, readers: null },
        schemas.lookup,
      );
      await schemas.deleteClass(className, rows);
    }
    return { body: {} };
  });
  router.add('DELETE', '/purge/:className', async (req) => {
    requireMaster(req);
    const className = req.params.className!;
    checkClassName(className);
    const schema = schemas.get(className);
    if (schema) await store.purge(schema);
    return { body: {} };
  });
}

/**
 * Seeds many rows fast: the same steps as Records.create (parse the body, reduce it to values,
 * insert) straight through the store, in transactions of 10,000 (as bench/service.ts does).
 * Used by the data-browser e2e tests and `npm run bench -- console`.
 */
import { initialValues, parseWriteBody } from '../server/src/data/write-body.ts';
import type { Service } from '../server/src/index.ts';
import { newObjectId } from '../server/src/util/ids.ts';

export async function seedRows(
  service: Service,
  className: string,
  count: number,
  make: (i: number) => Record<string, unknown>,
  chunk = 10_000,
): Promise<void> {
  const { store, schemas } = service.core;
  const schema = schemas.get(className);
  if (!schema) throw new Error(`no class ${className} to seed`);
  for (let from = 0; from < count; from += chunk) {
    await store.transaction(async () => {
      for (let i = from; i < Math.min(count, from + chunk); i++) {
        const parsed = parseWriteBody(make(i), 'create', schema.fields);
        const { values } = initialValues(parsed, schema.fields);
        await store.insert(schema, {
          objectId: newObjectId(),
          createdAt: new Date().toISOString(),
          values,
          acl: parsed.acl ?? null,
          relations: parsed.relations,
        });
      }
    });
  }
}

/**
 * Seeds many rows fast: through the write pipeline (the path POST /classes takes), in
 * transactions of 10,000 (as bench/service.ts does).
 * Used by the data-browser e2e tests and `npm run bench -- console`.
 */
import type { Service } from '../server/src/index.ts';
import { MASTER } from '../server/src/kernel/caller.ts';

export async function seedRows(
  service: Service,
  className: string,
  count: number,
  make: (i: number) => Record<string, unknown>,
  chunk = 10_000,
): Promise<void> {
  const { store, schemas } = service.core;
  if (!schemas.get(className)) throw new Error(`no class ${className} to seed`);
  const master = { caller: MASTER, source: 'system' as const, context: {} };
  for (let from = 0; from < count; from += chunk) {
    await store.transaction(async () => {
      for (let i = from; i < Math.min(count, from + chunk); i++) {
        await service.data.writes.create(master, className, make(i));
      }
    });
  }
}

import { isObject } from '@bds/client/protocol';
import { aclGrant } from '../kernel/acl.ts';
import type { Caller } from '../kernel/caller.ts';
import type { Row, WireAcl } from '../kernel/records.ts';
import type { ClassSchema } from '../kernel/schema.ts';
import { classVerdict, viewOf } from './authorize.ts';
import type { Core } from './core.ts';
import type { Reads } from './reads.ts';
import type { ParsedWrite } from './write-body.ts';

/**
 * Copies into an update's answer the values its operations produced (Increment, Add...); below an
 * Object field as the object of the keys they changed (`{"obj": {"number": 20}}`), as the
 * incumbent answers. Whether any such value was copied.
 */
export function echoProducedValues(parsed: ParsedWrite, after: Row, answer: Row): boolean {
  let returning = false;
  for (const w of parsed.writes) {
    if (w.kind === 'set' || w.kind === 'delete') continue;
    returning = true;
    if (w.subPath.length === 0) {
      answer[w.field] = after[w.field] ?? null;
      continue;
    }
    let stored: unknown = after[w.field];
    if (!isObject(answer[w.field])) answer[w.field] = {};
    let echoed = answer[w.field] as Row;
    for (const [i, key] of w.subPath.entries()) {
      stored = isObject(stored) && Object.hasOwn(stored, key) ? stored[key] : undefined;
      if (i === w.subPath.length - 1) {
        echoed[key] = stored ?? null;
      } else {
        if (!isObject(echoed[key])) echoed[key] = {};
        echoed = echoed[key] as Row;
      }
    }
  }
  return returning;
}

/**
 * Whether the caller may read a row it has just written (CLP get, its row condition, ACL read).
 * Without a CLP row condition the ACL decides alone, in memory on the row the write answered
 * (the same rule the store compiles, kernel/acl.ts), so no read is issued; otherwise the store
 * answers. A failing check withholds, never throws.
 */
export async function readableAfterWrite(
  core: Core,
  reads: Reads,
  caller: Caller,
  schema: ClassSchema,
  objectId: string,
  after: Row,
): Promise<boolean> {
  if (caller.isMaster) return true;
  const verdict = classVerdict(core, caller, schema.className, 'get');
  if (!verdict.allowed) return false;
  if (verdict.condition === undefined) {
    return aclGrant(after.ACL as WireAcl | undefined, caller.principals, 'read') !== null;
  }
  return reads.canRead(caller, schema, objectId).catch(() => false);
}

/** Write responses strip protected fields unless protectedFieldsSaveResponseExempt. */
export function stripWriteResponse<T extends Row>(
  core: Core,
  caller: Caller,
  className: string,
  result: T,
  created?: ParsedWrite,
): T {
  if (caller.isMaster || core.options.protectedFieldsSaveResponseExempt) return result;
  const schema = core.schemas.get(className);
  if (!schema) return result;
  const view = viewOf(core, caller, schema);
  // Nothing hidden whatever the row: nothing to strip (the common class without protectedFields).
  if (view.fixedHidden?.length === 0 && view.unqueryable.size === 0) return result;
  // On create the row is what was written; on update the fields hidden on any row are stripped.
  let row: Row | undefined;
  if (created) {
    row = { objectId: result.objectId };
    for (const w of created.writes) if (w.kind === 'set' && w.subPath.length === 0) row[w.field] = w.value;
  }
  const hidden = row ? view.hidden(row) : [...view.unqueryable];
  for (const field of hidden) {
    if (field !== 'objectId' && field !== 'createdAt' && field !== 'updatedAt') delete result[field];
  }
  return result;
}

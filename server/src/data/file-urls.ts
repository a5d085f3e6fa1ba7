import { isIssuedFileName, isObject } from '@bds/client/protocol';
import type { Row } from '../kernel/records.ts';
import type { ClassSchema } from '../kernel/schema.ts';
import type { Core } from './core.ts';

/**
 * File values are stored by name only; their url is built when a row is read, from the current
 * public address (so a changed serverURL never leaves stale links in the data).
 */
export function fillFileUrls(core: Core, schema: ClassSchema, rows: Row[]): void {
  const url = core.hooks.fileUrl.hooks[0];
  if (!url) return;
  const fields = fileFields(schema);
  if (fields.length === 0) return;
  for (const row of rows) {
    for (const field of fields) {
      const value = row[field];
      if (isObject(value) && value.__type === 'File' && typeof value.name === 'string') {
        // A name this service never issued (stored before the rule) gets no url: nothing to link to.
        row[field] = isIssuedFileName(value.name)
          ? { __type: 'File', name: value.name, url: url(value.name) }
          : { __type: 'File', name: value.name };
      }
    }
  }
}

/** The File fields of a schema, worked out once per schema object (a changed schema is a new object). */
const FILE_FIELDS = new WeakMap<ClassSchema, readonly string[]>();

function fileFields(schema: ClassSchema): readonly string[] {
  let fields = FILE_FIELDS.get(schema);
  if (!fields) {
    fields = Object.entries(schema.fields)
      .filter(([, def]) => def.type === 'File')
      .map(([name]) => name);
    FILE_FIELDS.set(schema, fields);
  }
  return fields;
}

/**
 * The selected rows of the grid and what is done to all of them at once: clone, delete, set or
 * unset one column. Each is one bulk call to the bff (one audit entry); the toast says how many
 * rows it changed and the first refusals.
 */
import { useState } from 'react';
import { countText } from '../../../lib/plural.ts';
import { pushToast, toast } from '../../../lib/toast.ts';
import { parseEdit, type Row, type SchemaDoc, typeOf } from '../../../lib/wire.ts';
import { type BulkAnswer, dataApi } from '../api/bff.ts';
import type { RowPages } from './use-row-pages.ts';

/** A result toast: success, or an error with the detail (partial failures of bulk writes). */
function notify(ok: boolean, title: string, detail?: string): void {
  pushToast({ kind: ok ? 'success' : 'error', title, detail });
}

/** The result of a bulk write: how many rows, and the first refusals. */
function bulkNotice(verb: string, res: BulkAnswer): void {
  const errs = res.results.filter((r) => r.error).map((r) => `${r.error!.code}: ${r.error!.error}`);
  notify(
    res.failed === 0,
    `${verb} ${countText(res.succeeded, 'row')}`,
    res.failed ? `${res.failed} refused — ${errs.slice(0, 3).join('; ')}` : undefined,
  );
}

/** Fields a clone copies: all but the ids, the dates the service sets, and relations. */
const NOT_CLONED = ['objectId', 'createdAt', 'updatedAt'];

export interface BulkActionsInput {
  appId: string;
  schema: SchemaDoc;
  rows: RowPages;
  /** After a write: the rows and counts fetched anew. */
  refresh(): void;
  /** Rows the bff deleted. */
  rowsDeleted(ids: string[]): void;
}

export function useBulkActions({ appId, schema, rows, refresh, rowsDeleted }: BulkActionsInput) {
  const cls = schema.className;
  const [selected, setSelected] = useState<Set<string>>(new Set());
  /** The column and the value (as typed) the selection bar sets. */
  const [field, setField] = useState('');
  const [value, setValue] = useState('');
  const ids = [...selected];
  const selectedRows = (): Row[] => rows.loadedRows().filter((r) => selected.has(r.objectId));

  /** Sets (or, with `to` undefined, unsets) the chosen column on the selected rows. */
  const write = async (to: unknown) => {
    try {
      const res = await dataApi.bulkUpdate(
        appId,
        cls,
        ids,
        field,
        to === undefined ? { __op: 'Delete' } : to,
      );
      bulkNotice(to === undefined ? `Unset ${field} on` : 'Updated', res);
      refresh();
    } catch (err) {
      toast.error(err, 'Bulk edit refused');
    }
  };

  return {
    selected,
    setSelected,
    ids,
    selectedRows,
    field,
    setField,
    value,
    setValue,
    /** Sets the typed value on the selected rows, or says why it cannot be read. */
    setOnSelected() {
      const r = parseEdit(typeOf(schema, field), value, schema.fields[field]?.targetClass);
      if (!r.ok) return notify(false, 'Bulk edit', r.error);
      void write(r.value);
    },
    /** Removes the column's value from the selected rows, once confirmed. */
    unsetOnSelected() {
      const what = `${field} on ${countText(ids.length, 'selected row')} of ${cls}`;
      if (window.confirm(`Remove the value of ${what}?`)) void write(undefined);
    },
    /** Creates a copy of each selected row (one bulk create: one audit entry for the whole clone). */
    async cloneSelected() {
      const copies = selectedRows().map((row) => {
        const fields: Record<string, unknown> = {};
        for (const [k, v] of Object.entries(row))
          if (!NOT_CLONED.includes(k) && typeOf(schema, k) !== 'Relation') fields[k] = v;
        return fields;
      });
      try {
        bulkNotice('Cloned', await dataApi.bulkCreate(appId, cls, copies));
      } catch (err) {
        toast.error(err, 'Clone refused');
      }
      refresh();
    },
    /** Deletes the selected rows, once confirmed; the deleted ones leave the grid. */
    async deleteSelected() {
      if (!window.confirm(`Delete ${ids.length} selected ${ids.length === 1 ? 'row' : 'rows'} of ${cls}?`))
        return;
      try {
        const res = await dataApi.bulkDelete(appId, cls, ids);
        bulkNotice('Deleted', res);
        rowsDeleted(ids.filter((_, i) => res.results[i]?.success !== undefined));
        setSelected(new Set());
        refresh();
      } catch (err) {
        toast.error(err, 'Delete refused');
      }
    },
  };
}

export type BulkActions = ReturnType<typeof useBulkActions>;

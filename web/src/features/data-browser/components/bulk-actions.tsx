/**
 * The controls of the selected rows: the toolbar's ACL, Add row, Clone and Delete buttons, and the
 * selection bar that sets or unsets one column on every selected row. Writers only, as master.
 */
import { countText } from '../../../lib/plural.ts';
import { isEditableField, type Row, type SchemaDoc, typeOf } from '../../../lib/wire.ts';
import type { BulkActions } from '../hooks/use-bulk-actions.ts';
import { TOOL_BUTTON } from './tool-button.ts';

export function BulkActionButtons({
  bulk,
  onEditAcl,
  onAddRow,
}: {
  bulk: BulkActions;
  onEditAcl(rows: Row[]): void;
  onAddRow(): void;
}) {
  const n = bulk.ids.length;
  return (
    <>
      <button
        type="button"
        className={TOOL_BUTTON}
        disabled={n === 0}
        onClick={() => onEditAcl(bulk.selectedRows())}
      >
        ACL {n || ''}
      </button>
      <button type="button" className={TOOL_BUTTON} onClick={onAddRow}>
        Add row
      </button>
      <button type="button" className={TOOL_BUTTON} disabled={n === 0} onClick={bulk.cloneSelected}>
        Clone {n || ''}
      </button>
      <button
        type="button"
        className={`${TOOL_BUTTON} text-red-700`}
        disabled={n === 0}
        onClick={bulk.deleteSelected}
      >
        Delete {n || ''}
      </button>
    </>
  );
}

/** "Set <column> <value> on N rows", and "Unset on N rows". */
export function BulkEditBar({
  bulk,
  schema,
  columns,
}: {
  bulk: BulkActions;
  schema: SchemaDoc;
  columns: string[];
}) {
  const n = bulk.ids.length;
  return (
    <div className="flex flex-wrap items-center gap-1 border-b p-2 text-sm" data-testid="selection-bar">
      Set
      <select
        aria-label="bulk edit column"
        className="rounded border dark:bg-gray-800"
        value={bulk.field}
        onChange={(e) => bulk.setField(e.target.value)}
      >
        <option value="">column…</option>
        {columns
          .filter((c) => isEditableField(schema.className, c, typeOf(schema, c)))
          .map((c) => (
            <option key={c}>{c}</option>
          ))}
      </select>
      <input
        aria-label="bulk edit value"
        className="w-32 rounded border px-1 dark:bg-gray-800"
        value={bulk.value}
        onChange={(e) => bulk.setValue(e.target.value)}
      />
      <button type="button" className={TOOL_BUTTON} disabled={!bulk.field} onClick={bulk.setOnSelected}>
        on {countText(n, 'row')}
      </button>
      <button type="button" className={TOOL_BUTTON} disabled={!bulk.field} onClick={bulk.unsetOnSelected}>
        Unset on {countText(n, 'row')}
      </button>
    </div>
  );
}

/**
 * Shown over the grid when there are no rows: none match the filter, or the class is empty and a
 * writer is offered its first row or an import.
 */
import type { ReactNode } from 'react';
import { TOOL_BUTTON } from './tool-button.ts';

export function EmptyClass({
  cls,
  hasFilter,
  onAddRow,
  importInput,
}: {
  cls: string;
  hasFilter: boolean;
  /** For writers viewing as master: adds the first row. */
  onAddRow?(): void;
  /** A file input that starts an import (`useImportExport`'s `importInput`). */
  importInput(label: string, text: string, className?: string): ReactNode;
}) {
  return (
    <div
      className="absolute inset-x-0 top-10 flex flex-col items-center gap-2 p-6 text-sm text-gray-600"
      data-testid="empty-class"
    >
      <p className="text-base font-semibold">No rows</p>
      {hasFilter ? (
        <p>None of the rows of {cls} match this filter.</p>
      ) : (
        onAddRow && (
          <div className="flex gap-2">
            <button type="button" className={TOOL_BUTTON} onClick={onAddRow}>
              Add the first row
            </button>
            {importInput('import a file', 'Import a file', `${TOOL_BUTTON} cursor-pointer`)}
          </div>
        )
      )}
    </div>
  );
}

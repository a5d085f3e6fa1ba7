/**
 * Rows the console learned were deleted (its own delete, a live event, a write answered "not
 * found"): they leave the grid, and an open panel on one of them closes, saying so.
 */
import { useCallback, useRef } from 'react';
import { toast } from '../../../lib/toast.ts';
import type { RowPages } from './use-row-pages.ts';

/** A row the console learned was deleted while its panel was open: the panel closes and says so. */
const deletedNotice = (id: string) => toast.info(`Row ${id} was deleted`, 'Its panel is closed.');

export function useRowsDeleted(
  removeRow: RowPages['remove'],
  /** The row whose panel is open. */
  activeRow: string | null,
  /** Closes the row panel. */
  closeRow: () => void,
): (ids: string[]) => void {
  const activeRef = useRef(activeRow);
  activeRef.current = activeRow;
  return useCallback(
    (ids: string[]) => {
      for (const id of ids) removeRow(id);
      const open = activeRef.current;
      if (!open || !ids.includes(open)) return;
      deletedNotice(open);
      closeRow();
    },
    [removeRow, closeRow],
  );
}

/**
 * What the address says about the open class: the filter (`where`), the sort, the open row
 * (`row`) and its tab (`history`), and the viewpoint (`as`). A link to the page opens the same
 * view; the Back button undoes a change of any of them.
 */
import { useCallback, useMemo } from 'react';
import { useSearchParams } from 'react-router';
import type { Where } from '../../../lib/filter.ts';
import { HISTORY_PARAM } from '../../../lib/row-history.ts';
import type { Viewpoint } from '../../../lib/security-api.ts';
import { type SchemaDoc, sortableFields } from '../../../lib/wire.ts';
import { parseWhere } from '../api/early.ts';
import { parseSort, type Sort } from '../lib/keyset.ts';
import { parseViewpoint } from '../lib/viewpoint.ts';

export interface ClassUrl {
  /** The filter as it stands in the address (JSON), or null. */
  whereText: string | null;
  where: Where;
  hasFilter: boolean;
  /** The fields the grid can sort by; `sort` is always one of them. */
  sortable: string[];
  sort: Sort;
  /** The objectId of the row whose panel is open. */
  activeRow: string | null;
  /** The row panel shows the row's history (`history=1`) rather than its fields. */
  rowHistory: boolean;
  /** The viewpoint as it stands in the address, empty for master. */
  asText: string;
  /** "View as": rows, count and row detail as this viewpoint gets them; null is master (normal). */
  viewpoint: Viewpoint | null;
  /** Sets (or, with null or empty, removes) parameters: a new history entry. */
  update(changes: Record<string, string | null>): void;
  /** Closes the row panel in place (the row is gone): no history entry. */
  closeRow(): void;
}

export function useClassUrl(schema: SchemaDoc): ClassUrl {
  const [params, setParams] = useSearchParams();
  const whereText = params.get('where');
  const where = useMemo(() => parseWhere(whereText), [whereText]);
  const sortParam = params.get('sort');
  const sortable = useMemo(() => sortableFields(schema), [schema]);
  const sort = useMemo<Sort>(() => {
    const s = parseSort(sortParam);
    return sortable.includes(s.field) ? s : parseSort(null);
  }, [sortParam, sortable]);
  const asText = params.get('as') ?? '';
  const viewpoint = useMemo(() => parseViewpoint(asText), [asText]);

  const update = (changes: Record<string, string | null>) => {
    const next = new URLSearchParams(params);
    for (const [k, v] of Object.entries(changes)) {
      if (v === null || v === '') next.delete(k);
      else next.set(k, v);
    }
    setParams(next, { replace: false });
  };

  const closeRow = useCallback(
    () =>
      setParams(
        (prev) => {
          const next = new URLSearchParams(prev);
          next.delete('row');
          return next;
        },
        { replace: true },
      ),
    [setParams],
  );

  return {
    whereText,
    where,
    hasFilter: Object.keys(where).length > 0,
    sortable,
    sort,
    activeRow: params.get('row'),
    rowHistory: params.get(HISTORY_PARAM) === '1',
    asText,
    viewpoint,
    update,
    closeRow,
  };
}

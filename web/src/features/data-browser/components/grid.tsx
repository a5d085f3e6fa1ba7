/** The virtualized grid: rows fetched as they scroll into view, placeholders until they arrive. */
import { elementScroll, observeElementOffset, useVirtualizer } from '@tanstack/react-virtual';
import { memo, useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from 'react';
import type { Viewpoint } from '../../../lib/security-api.ts';
import { isEditableField, type Row, type SchemaDoc, typeOf } from '../../../lib/wire.ts';
import { LIVE_MARK, type RowPages } from '../hooks/use-row-pages.ts';
import type { Sort } from '../lib/keyset.ts';
import { arrangeColumns, type ColumnPrefs, moveColumn } from '../lib/prefs.ts';
import { rowShift, scrollScale } from '../lib/scroll-scale.ts';
import { CellValue } from './cell.tsx';
import { CellEditor } from './cell-editor.tsx';
import { EditCellButton, hasOwnEditor, NotShownCell, OwnCellEditor } from './own-cell-editors.tsx';

export const ROW_HEIGHT = 30;
const SELECT_WIDTH = 36;
const DEFAULT_WIDTH = 160;
/** Wide enough for the header and a 10-character id without truncation. */
const OBJECT_ID_WIDTH = 150;

/** A push pin (an inline SVG: emoji glyphs are missing from many Linux fonts). */
function PinIcon({ filled }: { filled: boolean }) {
  return (
    <svg viewBox="0 0 16 16" width="12" height="12" aria-hidden="true" data-icon="pin">
      <path
        d="M10.5 1.5l4 4-2 1-2.5 2.5.5 3-1.5 1.5-3-3-3.5 3.5-.5-.5L5.5 10l-3-3L4 5.5l3 .5L9.5 3.5z"
        fill={filled ? 'currentColor' : 'none'}
        stroke="currentColor"
        strokeWidth="1.2"
        strokeLinejoin="round"
      />
    </svg>
  );
}

/** Live mode's mark on a row (set by useRowPages.live): new, or changed elsewhere. */
const liveMark = (row: Row | undefined): string | undefined =>
  row ? ((row as Record<string, unknown>)[LIVE_MARK] as string | undefined) : undefined;

export interface GridProps {
  appId: string;
  className: string;
  schema: SchemaDoc;
  columns: string[];
  sortable: string[];
  rows: RowPages;
  total: number;
  sort: Sort;
  onSort(sort: Sort): void;
  prefs: ColumnPrefs;
  setPrefs(p: ColumnPrefs): void;
  selected: Set<string>;
  setSelected(s: Set<string>): void;
  activeRow: string | null;
  onOpenRow(id: string): void;
  onEdit(row: Row, field: string, value: unknown): Promise<boolean>;
  /** False for read-only console users: no editors open. */
  canWrite: boolean;
  /** "View as": the viewpoint the rows are read as; a cell its row does not hold has a "Why?". */
  viewpoint?: Viewpoint | null;
  onWhyCell?(objectId: string, field: string): void;
}

export function Grid(p: GridProps) {
  const scrollRef = useRef<HTMLDivElement>(null);
  const [editing, setEditing] = useState<{ id: string; field: string } | null>(null);
  const [dragging, setDragging] = useState<string | null>(null);
  const { pinned, rest } = arrangeColumns(p.columns, p.prefs);
  const cols = [...pinned, ...rest];
  const width = (c: string) => p.prefs.widths[c] ?? (c === 'objectId' ? OBJECT_ID_WIDTH : DEFAULT_WIDTH);
  const left: Record<string, number> = {};
  let acc = SELECT_WIDTH;
  for (const c of pinned) {
    left[c] = acc;
    acc += width(c);
  }
  const totalWidth = cols.reduce((s, c) => s + width(c), SELECT_WIDTH);

  // Past about a million rows the spacer is capped and scroll positions are scaled (scroll-scale.ts).
  const ratioRef = useRef(1);
  const virt = useVirtualizer({
    count: p.total,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: 8,
    observeElementOffset: (instance, cb) =>
      observeElementOffset(instance, (offset, isScrolling) => cb(offset * ratioRef.current, isScrolling)),
    scrollToFn: (offset, options, instance) => elementScroll(offset / ratioRef.current, options, instance),
  });
  const scale = scrollScale(p.total * ROW_HEIGHT, virt.scrollRect?.height ?? 0, ROW_HEIGHT);
  ratioRef.current = scale.ratio;
  const shift = rowShift(virt.scrollOffset ?? 0, scale.ratio);
  const items = virt.getVirtualItems();
  const first = items[0]?.index ?? 0;
  const last = items[items.length - 1]?.index ?? 0;
  const { ensure } = p.rows;
  // Live mode puts rows created elsewhere above the loaded ones: when the user has scrolled, move
  // the scroll position down by as much, so the rows on screen stay where they are.
  const extraRef = useRef(p.rows.extra);
  useLayoutEffect(() => {
    const added = p.rows.extra - extraRef.current;
    extraRef.current = p.rows.extra;
    const el = scrollRef.current;
    if (added > 0 && el && el.scrollTop > 0) el.scrollTop += (added * ROW_HEIGHT) / ratioRef.current;
  }, [p.rows.extra]);
  useEffect(() => {
    if (p.total > 0) ensure(first, Math.min(last, p.total - 1));
  }, [ensure, first, last, p.total]);

  const startResize = (e: React.PointerEvent, col: string) => {
    e.preventDefault();
    e.stopPropagation();
    const x0 = e.clientX;
    const w0 = width(col);
    const move = (ev: PointerEvent) => {
      const w = Math.max(50, Math.round(w0 + ev.clientX - x0));
      p.setPrefs({ ...p.prefs, widths: { ...p.prefs.widths, [col]: w } });
    };
    const up = () => {
      window.removeEventListener('pointermove', move);
      window.removeEventListener('pointerup', up);
    };
    window.addEventListener('pointermove', move);
    window.addEventListener('pointerup', up);
  };

  const cellStyle = (c: string): React.CSSProperties =>
    c in left ? { width: width(c), left: left[c], position: 'sticky', zIndex: 2 } : { width: width(c) };

  // Rows are memoized: they get the same layout object and the same callbacks until these change.
  const layoutKey = JSON.stringify([cols, pinned, p.prefs.widths]);
  // biome-ignore lint/correctness/useExhaustiveDependencies: the layout is a function of layoutKey
  const layout = useMemo<RowLayout>(
    () => ({ cols, totalWidth, styles: Object.fromEntries(cols.map((c) => [c, cellStyle(c)])) }),
    [layoutKey],
  );
  const latest = useRef(p);
  latest.current = p;
  const editingRef = useRef(editing);
  editingRef.current = editing;
  /** Focuses a cell once it is rendered (after an editor closes, or a move by the arrow keys). */
  const focusCell = useCallback((id: string | null, field: string, index?: number) => {
    const sel =
      index !== undefined
        ? `[data-index="${index + 1}"] [data-field="${field}"]`
        : `[data-row-id="${id}"] [data-field="${field}"]`;
    const focus = () => {
      const el = scrollRef.current?.querySelector<HTMLElement>(sel);
      el?.focus({ preventScroll: index === undefined });
      return !!el;
    };
    // Now when the cell is on screen (quick typing sees the new focus), else once it renders.
    if (!focus()) requestAnimationFrame(() => void focus());
  }, []);
  /** Arrow keys move between cells, as in a spreadsheet; rows out of view scroll in first. */
  const onGridKey = (e: React.KeyboardEvent) => {
    const target = e.target as HTMLElement;
    const field = target.dataset.field;
    const rowEl = target.closest<HTMLElement>('[data-index]');
    if (!field || !rowEl || editingRef.current) return;
    const index = Number(rowEl.dataset.index) - 1;
    const col = cols.indexOf(field);
    let next: [number, string] | null = null;
    if (e.key === 'ArrowDown') next = [Math.min(p.total - 1, index + 1), field];
    else if (e.key === 'ArrowUp') next = [Math.max(0, index - 1), field];
    else if (e.key === 'ArrowRight') next = [index, cols[Math.min(cols.length - 1, col + 1)]!];
    else if (e.key === 'ArrowLeft') next = [index, cols[Math.max(0, col - 1)]!];
    if (!next) return;
    e.preventDefault();
    const [i, f] = next;
    virt.scrollToIndex(i, { align: 'auto' });
    focusCell(null, f, i);
  };
  const actions = useMemo<RowActions>(
    () => ({
      openRow: (id) => latest.current.onOpenRow(id),
      startEdit: (id, field) => setEditing({ id, field }),
      cancelEdit: () => {
        const was = editingRef.current;
        setEditing(null);
        if (was) focusCell(was.id, was.field);
      },
      commitEdit: async (row, field, value) => {
        setEditing(null);
        focusCell(row.objectId, field);
        await latest.current.onEdit(row, field, value);
      },
      apply: (row, field, value) => latest.current.onEdit(row, field, value),
      whyCell: (id, field) => latest.current.onWhyCell?.(id, field),
      select: (id, on) => {
        const s = new Set(latest.current.selected);
        if (on) s.add(id);
        else s.delete(id);
        latest.current.setSelected(s);
      },
    }),
    [focusCell],
  );

  const allLoadedIds = () => p.rows.loadedRows().map((r) => r.objectId);

  return (
    // biome-ignore lint/a11y/noStaticElementInteractions: arrow keys move the focus between its cells
    <div
      ref={scrollRef}
      className="relative flex-1 overflow-auto text-sm"
      data-testid="grid"
      data-class={p.className}
      data-total={p.total}
      data-scroll-ratio={scale.ratio}
      onKeyDown={onGridKey}
    >
      <div style={{ width: totalWidth, minWidth: '100%' }}>
        <div
          className="sticky top-0 z-20 flex border-b bg-gray-100 font-medium dark:bg-gray-800"
          style={{ height: ROW_HEIGHT }}
        >
          <div
            className="sticky left-0 z-30 flex items-center justify-center bg-gray-100 dark:bg-gray-800"
            style={{ width: SELECT_WIDTH }}
          >
            <input
              type="checkbox"
              aria-label="select all loaded rows"
              checked={p.selected.size > 0 && p.selected.size >= allLoadedIds().length}
              onChange={(e) => p.setSelected(new Set(e.target.checked ? allLoadedIds() : []))}
            />
          </div>
          {cols.map((c) => {
            const canSort = p.sortable.includes(c);
            const active = p.sort.field === c;
            const type = typeOf(p.schema, c);
            const target = p.schema.fields[c]?.targetClass;
            const pinnedHere = c in left;
            return (
              // biome-ignore lint/a11y/noStaticElementInteractions: drag and drop of column headers
              <div
                key={c}
                data-column={c}
                draggable
                onDragStart={() => setDragging(c)}
                onDragOver={(e) => e.preventDefault()}
                onDrop={() => {
                  if (!dragging) return;
                  const order = moveColumn(cols, dragging, c);
                  p.setPrefs({ ...p.prefs, order });
                  setDragging(null);
                }}
                data-sort={active ? (p.sort.desc ? 'descending' : 'ascending') : undefined}
                className="group relative flex items-center gap-1 border-r bg-gray-100 px-2 dark:bg-gray-800"
                style={cellStyle(c)}
                title={`${c} (${type}${target ? ` → ${target}` : ''}) — ${canSort ? 'click to sort' : `${type} columns cannot be sorted`}`}
              >
                <button
                  type="button"
                  className={`truncate text-left ${canSort ? 'cursor-pointer hover:underline' : 'cursor-default'}`}
                  onClick={() => canSort && p.onSort({ field: c, desc: active ? !p.sort.desc : false })}
                >
                  {c}
                  {active ? (p.sort.desc ? ' ▼' : ' ▲') : ''}
                </button>
                {c !== 'objectId' && <span className="truncate text-xs text-gray-500">{type}</span>}
                <button
                  type="button"
                  className={`ml-auto shrink-0 text-gray-500 group-hover:inline ${pinnedHere ? 'inline' : 'hidden'}`}
                  title={pinnedHere ? 'Unpin' : 'Pin to the left'}
                  aria-label={pinnedHere ? `unpin ${c}` : `pin ${c}`}
                  onClick={() => {
                    const pins = p.prefs.pinned.includes(c)
                      ? p.prefs.pinned.filter((x) => x !== c)
                      : [...p.prefs.pinned, c];
                    p.setPrefs({ ...p.prefs, pinned: pins });
                  }}
                >
                  <PinIcon filled={pinnedHere} />
                </button>
                <button
                  type="button"
                  className="hidden shrink-0 text-xs group-hover:inline"
                  title="Hide column"
                  aria-label={`hide ${c}`}
                  onClick={() => p.setPrefs({ ...p.prefs, hidden: [...p.prefs.hidden, c] })}
                >
                  ✕
                </button>
                <span
                  title={`resize ${c}`}
                  data-resize={c}
                  className="absolute right-0 top-0 h-full w-1.5 cursor-col-resize hover:bg-blue-400"
                  onPointerDown={(e) => startResize(e, c)}
                />
              </div>
            );
          })}
        </div>
        <div style={{ height: scale.realSize, position: 'relative' }}>
          {/* One element moves by the scale's shift: the rows keep their own offsets, so a scroll
              restyles only the rows that mount, not every row (see scroll-scale.ts). */}
          <div
            className="absolute left-0 top-0"
            style={{
              width: totalWidth,
              minWidth: '100%',
              transform: shift ? `translateY(${-shift}px)` : undefined,
              willChange: scale.ratio === 1 ? undefined : 'transform',
            }}
          >
            {items.map((it) => {
              const row = p.rows.rowAt(it.index);
              return (
                <GridRow
                  key={it.key}
                  index={it.index}
                  start={it.start}
                  row={row}
                  layout={layout}
                  schema={p.schema}
                  appId={p.appId}
                  className={p.className}
                  canWrite={p.canWrite}
                  viewpoint={p.viewpoint ?? null}
                  isActive={!!row && row.objectId === p.activeRow}
                  isSelected={!!row && p.selected.has(row.objectId)}
                  editingField={row && editing?.id === row.objectId ? editing.field : null}
                  actions={actions}
                />
              );
            })}
          </div>
        </div>
      </div>
    </div>
  );
}

interface RowLayout {
  cols: string[];
  totalWidth: number;
  styles: Record<string, React.CSSProperties>;
}

interface RowActions {
  openRow(id: string): void;
  startEdit(id: string, field: string): void;
  cancelEdit(): void;
  commitEdit(row: Row, field: string, value: unknown): Promise<void>;
  /** One change of a cell, its editor staying open (relations). */
  apply(row: Row, field: string, value: unknown): Promise<boolean>;
  whyCell(objectId: string, field: string): void;
  select(id: string, on: boolean): void;
}

interface GridRowProps {
  index: number;
  start: number;
  row: Row | undefined;
  layout: RowLayout;
  schema: SchemaDoc;
  appId: string;
  className: string;
  canWrite: boolean;
  viewpoint: Viewpoint | null;
  isActive: boolean;
  isSelected: boolean;
  editingField: string | null;
  actions: RowActions;
}

/** One grid row; re-renders only when its row, layout, selection or editor changes. */
const GridRow = memo(function GridRow({
  index,
  start,
  row,
  layout,
  schema,
  appId,
  className,
  canWrite,
  viewpoint,
  isActive,
  isSelected,
  editingField,
  actions,
}: GridRowProps) {
  const { cols, styles } = layout;
  return (
    <div
      data-index={index + 1}
      data-row-id={row?.objectId}
      data-live={liveMark(row)}
      className={`absolute left-0 flex border-b transition-opacity duration-700 ${
        isActive
          ? 'bg-blue-50 dark:bg-blue-950'
          : liveMark(row) === 'new' || liveMark(row) === 'changed'
            ? 'bg-yellow-100 dark:bg-yellow-900'
            : 'bg-white dark:bg-gray-900'
      }`}
      style={{
        top: 0,
        height: ROW_HEIGHT,
        transform: `translateY(${start}px)`,
        width: layout.totalWidth,
        minWidth: '100%',
        // Each row is a stacking context (its transform): the row with an open editor goes above
        // the rows after it, or they would cover the editor.
        zIndex: editingField ? 15 : undefined,
      }}
    >
      <div
        className="sticky left-0 z-10 flex items-center justify-center bg-inherit"
        style={{ width: SELECT_WIDTH }}
      >
        {row ? (
          <input
            type="checkbox"
            aria-label={`select ${row.objectId}`}
            checked={isSelected}
            onChange={(e) => actions.select(row.objectId, e.target.checked)}
          />
        ) : null}
      </div>
      {cols.map((c) => {
        if (!row)
          return (
            <div key={c} className="flex items-center border-r bg-inherit px-2" style={styles[c]}>
              <span
                className="h-3 w-3/4 animate-pulse rounded bg-gray-200 dark:bg-gray-700"
                data-placeholder
              />
            </div>
          );
        const type = typeOf(schema, c);
        const isEditing = editingField === c;
        const ownEditor = canWrite && hasOwnEditor(type);
        const editable = canWrite && isEditableField(className, c, type);
        return (
          // biome-ignore lint/a11y/noStaticElementInteractions: cells open editors (Enter or double-click)
          <div
            key={c}
            data-field={c}
            tabIndex={-1}
            className="relative flex items-center truncate border-r bg-inherit px-2"
            style={
              isEditing
                ? { ...styles[c], overflow: 'visible', zIndex: 25 }
                : { ...styles[c], overflow: 'hidden' }
            }
            onClick={() => c === 'objectId' && actions.openRow(row.objectId)}
            onDoubleClick={() => (editable || ownEditor) && actions.startEdit(row.objectId, c)}
            onKeyDown={(e) =>
              e.key === 'Enter' && (editable || ownEditor) && !isEditing && actions.startEdit(row.objectId, c)
            }
          >
            <span className="truncate">
              {viewpoint && c !== 'objectId' && !(c in row) ? (
                <NotShownCell
                  objectId={row.objectId}
                  field={c}
                  onWhy={() => actions.whyCell(row.objectId, c)}
                />
              ) : (
                <CellValue
                  appId={appId}
                  className={className}
                  objectId={row.objectId}
                  field={c}
                  type={type}
                  spec={schema.fields[c]}
                  value={row[c]}
                />
              )}
            </span>
            {ownEditor && !isEditing && (
              <EditCellButton
                objectId={row.objectId}
                field={c}
                onEdit={() => actions.startEdit(row.objectId, c)}
              />
            )}
            {isEditing && ownEditor && (
              <OwnCellEditor
                appId={appId}
                className={className}
                row={row}
                field={c}
                type={type}
                targetClass={schema.fields[c]?.targetClass}
                viewpoint={viewpoint}
                apply={(v) => actions.apply(row, c, v)}
                commit={(v) => void actions.commitEdit(row, c, v)}
                onCancel={actions.cancelEdit}
              />
            )}
            {isEditing && !ownEditor && (
              <CellEditor
                appId={appId}
                type={type}
                targetClass={schema.fields[c]?.targetClass}
                value={row[c]}
                onCancel={actions.cancelEdit}
                onCommit={(v) => actions.commitEdit(row, c, v)}
              />
            )}
          </div>
        );
      })}
    </div>
  );
});

/** Route `/apps/:appId/data/:className?`: class list, grid, filters, editing, row detail. */
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { useNavigate, useParams, useSearchParams } from 'react-router';
import { FilterBuilder } from '../../components/filter-builder.tsx';
import { errorText, isApiError } from '../../lib/api.ts';
import { openStream } from '../../lib/live-stream.ts';
import { countText } from '../../lib/plural.ts';
import type { Evaluation, Viewpoint } from '../../lib/security-api.ts';
import { useCanWrite, useSession } from '../../lib/session.ts';
import { useShortcutHelp } from '../../lib/shortcuts.ts';
import { pushToast, toast } from '../../lib/toast.ts';
import {
  columnsOf,
  indexedFields,
  isEditableField,
  parseEdit,
  type Row,
  type SchemaDoc,
  sortableFields,
  typeOf,
} from '../../lib/wire.ts';
import { type BulkAnswer, dataApi } from './api/bff.ts';
import { earlyKeys, parseWhere, startClassLoad, takeEarly } from './api/early.ts';
import { viewAsApi } from './api/viewas.ts';
import { AclChangeReview, asWireAcl, type WireAcl } from './components/acl-change-review.tsx';
import { AclEditor } from './components/acl-editor.tsx';
import { dataPath } from './components/cell.tsx';
import { ClassList } from './components/class-list.tsx';
import { CompareView } from './components/compare-view.tsx';
import { CreateRowDialog, needsCreateForm } from './components/create-row-dialog.tsx';
import { Grid } from './components/grid.tsx';
import { useImportExport } from './components/import-export.tsx';
import { RowDetail } from './components/row-detail.tsx';
import { RunOnRowsBar } from './components/run-on-rows.tsx';
import { SchemaPanel } from './components/schema-panel.tsx';
import { useViewpointName, ViewpointPicker } from './components/viewpoint-picker.tsx';
import { WhyDialog, type WhyQuestion } from './components/why-panel.tsx';
import { useRowPages } from './hooks/use-row-pages.ts';
import { parseSort, type Sort, sortText } from './lib/keyset.ts';
import { type ColumnPrefs, loadColumnPrefs, saveColumnPrefs } from './lib/prefs.ts';
import { parseViewpoint, viewpointParam } from './lib/viewpoint.ts';

/** Above this many rows, sorting by a column without an index says so and offers the index. */
export const LARGE_CLASS_ROWS = 10_000;

/** Below this width the class list starts collapsed while a class is open. */
const NARROW = 1024;

const countKey = (appId: string, cls: string, whereText: string, as: string) =>
  ['data-browser', appId, 'count', cls, whereText, as] as const;
const schemasKey = (appId: string) => ['data-browser', appId, 'schemas'] as const;

/** After live events stop for this long, the count is asked anew (the events moved it at once). */
const RECOUNT_AFTER_MS = 2000;

/** A row the console learned was deleted while its panel was open: the panel closes and says so. */
const deletedNotice = (id: string) => toast.info(`Row ${id} was deleted`, 'Its panel is closed.');

/** A result toast: success, or an error with the detail (partial failures of bulk writes). */
function notify(ok: boolean, title: string, detail?: string): void {
  pushToast({ kind: ok ? 'success' : 'error', title, detail });
}

export default function DataBrowserRoute() {
  const { appId = '', className } = useParams();
  const navigate = useNavigate();
  const qc = useQueryClient();
  const schemas = useQuery({
    queryKey: ['data-browser', appId, 'schemas'],
    queryFn: ({ signal }) => dataApi.schemas(appId, signal),
    staleTime: 30_000,
  });
  const list = schemas.data?.results ?? [];
  // The class's own schema is quick to answer: the grid can start from it while the schema list
  // (which counts every class) is still on its way.
  const own = useQuery({
    queryKey: ['data-browser', appId, 'schema', className],
    queryFn: ({ signal }) => dataApi.schema(appId, className ?? '', signal),
    enabled: !!className && !schemas.data,
    staleTime: 30_000,
    retry: false,
  });
  const schema = list.find((s) => s.className === className) ?? (schemas.data ? undefined : own.data);
  const [params] = useSearchParams();
  // A class opened: its first rows and count start now, beside the schema list (the list's own
  // query runs at mount), not after it. Only on a class change: a new row or filter asks by itself.
  const paramsRef = useRef(params);
  paramsRef.current = params;
  useEffect(() => {
    if (className) startClassLoad(appId, className, paramsRef.current);
  }, [appId, className]);
  const [listOpen, setListOpen] = useState(() => !className || window.innerWidth >= NARROW);

  const canWrite = useCanWrite();
  const run = useCallback(
    async (label: string, fn: () => Promise<unknown>) => {
      try {
        await fn();
        toast.success(`${label}: done`);
        await qc.invalidateQueries({ queryKey: ['data-browser', appId, 'schemas'] });
        return true;
      } catch (err) {
        toast.error(err, `${label} refused`);
        return false;
      }
    },
    [appId, qc],
  );

  return (
    <div className="flex h-full min-h-0 flex-1" data-testid="data-browser">
      <ClassList
        appId={appId}
        schemas={list}
        current={className}
        run={run}
        canWrite={canWrite}
        open={listOpen}
        onToggle={() => setListOpen(!listOpen)}
      />
      <div className="flex min-w-0 flex-1 flex-col">
        {schemas.error && <p className="p-2 text-red-600">{errorText(schemas.error)}</p>}
        {!className && <p className="p-4 text-gray-500">Pick a class.</p>}
        {className && schemas.isSuccess && !schema && <p className="p-4">No class named {className}.</p>}
        {schema && (
          <ClassView
            key={`${appId}/${schema.className}`}
            appId={appId}
            schema={schema}
            schemas={list}
            run={run}
            canWrite={canWrite}
            onDropped={() => navigate(dataPath(appId, '').replace(/\/$/, ''))}
          />
        )}
      </div>
    </div>
  );
}

function ClassView({
  appId,
  schema,
  schemas,
  run,
  canWrite,
  onDropped,
}: {
  appId: string;
  schema: SchemaDoc;
  schemas: SchemaDoc[];
  run(label: string, fn: () => Promise<unknown>): Promise<boolean>;
  canWrite: boolean;
  onDropped(): void;
}) {
  const cls = schema.className;
  const qc = useQueryClient();
  const me = useSession().data?.username ?? '';
  const [params, setParams] = useSearchParams();
  const whereText = params.get('where');
  const where = useMemo(() => parseWhere(whereText), [whereText]);
  const sortParam = params.get('sort');
  const sortable = useMemo(() => sortableFields(schema), [schema]);
  const sort = useMemo<Sort>(() => {
    const s = parseSort(sortParam);
    return sortable.includes(s.field) ? s : parseSort(null);
  }, [sortParam, sortable]);
  const activeRow = params.get('row');
  const columns = useMemo(() => columnsOf(schema), [schema]);
  // "View as": rows, count and row detail as this viewpoint gets them; null is master (normal).
  const asText = params.get('as') ?? '';
  const viewpoint = useMemo(() => parseViewpoint(asText), [asText]);
  const viewpointName = useViewpointName(appId, viewpoint);
  /** Real writes: never while viewing as someone else (edits there are dry runs). */
  const realWrite = canWrite && !viewpoint;
  const rows = useRowPages(appId, cls, where, sort, typeOf(schema, sort.field), viewpoint);
  const [why, setWhy] = useState<WhyQuestion | null>(null);
  const [aclRows, setAclRows] = useState<Row[] | null>(null);
  /** An ACL typed as JSON, waiting for its impact to be reviewed before it is saved. */
  const [aclTyped, setAclTyped] = useState<{ row: Row; acl: WireAcl } | null>(null);
  const [comparing, setComparing] = useState(false);
  const [compareSides, setCompareSides] = useState<[Viewpoint | null, Viewpoint | null]>([null, viewpoint]);
  const [dryRun, setDryRun] = useState<{
    objectId: string;
    field: string;
    body: Record<string, unknown>;
    answer: Evaluation;
  } | null>(null);
  const [prefs, setPrefsState] = useState<ColumnPrefs>(() => loadColumnPrefs(appId, cls));
  const setPrefs = (p: ColumnPrefs) => {
    setPrefsState(p);
    saveColumnPrefs(appId, cls, p);
  };
  const savedKey = ['data-browser', appId, 'filters', cls];
  const saved = useQuery({
    queryKey: savedKey,
    queryFn: ({ signal }) => dataApi.savedFilters(appId, cls, signal),
    staleTime: 30_000,
  });
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [panel, setPanel] = useState<'none' | 'filter' | 'schema' | 'columns'>(
    Object.keys(where).length ? 'filter' : 'none',
  );
  const [bulkField, setBulkField] = useState('');
  const [bulkValue, setBulkValue] = useState('');
  const [creating, setCreating] = useState(false);
  /** The JSON of the applied filter as typed in the JSON tab: shown again, not rewritten. */
  const [typedFilter, setTypedFilter] = useState<{ whereText: string; text: string } | null>(null);

  const hasFilter = Object.keys(where).length > 0;
  const countQueryKey = useMemo(
    () => countKey(appId, cls, whereText ?? '', asText),
    [appId, cls, whereText, asText],
  );
  const count = useQuery({
    queryKey: countQueryKey,
    queryFn: ({ signal }) =>
      viewpoint
        ? viewAsApi.count(appId, cls, viewpoint, where)
        : (takeEarly<{ count: number }>(earlyKeys.count(appId, cls, whereText ?? '')) ??
          dataApi.count(appId, cls, where, signal)),
    staleTime: 10_000,
    retry: false,
  });
  // Once the last page is read, the rows on hand are the total (live rows and deletions
  // included). Until then the count, which live events keep current; before it arrives, the
  // class list's count (no filter) or one page's worth. A refused query shows the service's
  // error instead of placeholders.
  const total = rows.error
    ? 0
    : rows.end !== null
      ? rows.extra + rows.end
      : (count.data?.count ?? rows.extra + (!hasFilter && schema.count ? schema.count : 100));
  const empty = !rows.error && rows.end === 0 && rows.extra === 0;

  // The class list shows the count this view keeps for the whole class (exact, and current).
  const wholeCount = !hasFilter && !viewpoint ? count.data?.count : undefined;
  useEffect(() => {
    if (wholeCount === undefined) return;
    qc.setQueryData<{ results: SchemaDoc[] }>(schemasKey(appId), (list) => {
      const mine = list?.results.find((s) => s.className === cls);
      if (!list || !mine || (mine.count === wholeCount && mine.countExact !== false)) return list;
      return {
        ...list,
        results: list.results.map((s) =>
          s.className === cls ? { ...s, count: wholeCount, countExact: true } : s,
        ),
      };
    });
  }, [qc, appId, cls, wholeCount]);

  /** A live event moves the count at once; once they stop, the count is asked anew. */
  const recount = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => () => clearTimeout(recount.current), []);
  const moveCount = useCallback(
    (delta: number) => {
      qc.setQueryData<{ count: number }>(countQueryKey, (c) =>
        c ? { count: Math.max(0, c.count + delta) } : c,
      );
      clearTimeout(recount.current);
      recount.current = setTimeout(
        () => void qc.invalidateQueries({ queryKey: countQueryKey, exact: true }),
        RECOUNT_AFTER_MS,
      );
    },
    [qc, countQueryKey],
  );

  const update = (changes: Record<string, string | null>) => {
    const next = new URLSearchParams(params);
    for (const [k, v] of Object.entries(changes)) {
      if (v === null || v === '') next.delete(k);
      else next.set(k, v);
    }
    setParams(next, { replace: false });
  };

  /**
   * Rows the console learned were deleted (its own delete, a live event, a write answered "not
   * found"): they leave the grid, and an open panel on one of them closes, saying so.
   */
  const activeRef = useRef(activeRow);
  activeRef.current = activeRow;
  const removeRow = rows.remove;
  const rowsDeleted = useCallback(
    (ids: string[]) => {
      for (const id of ids) removeRow(id);
      const open = activeRef.current;
      if (!open || !ids.includes(open)) return;
      deletedNotice(open);
      setParams(
        (prev) => {
          const next = new URLSearchParams(prev);
          next.delete('row');
          return next;
        },
        { replace: true },
      );
    },
    [removeRow, setParams],
  );

  // Live mode: the bff's realtime stream (as master) for the open class patches the loaded rows
  // and the count.
  const [liveMode, setLiveMode] = useState(false);
  const [liveStatus, setLiveStatus] = useState('');
  const liveApply = rows.live;
  useEffect(() => {
    if (!liveMode) return;
    setLiveStatus('connecting…');
    return openStream(
      { appId, className: cls, where, viewpoint: 'master' },
      {
        onReady: () => setLiveStatus('live'),
        onEvent: (e) => {
          if (e.kind === 'filtered' || !e.object) return;
          const row = e.object as Row;
          liveApply(e.kind, row);
          if (e.kind === 'create' || e.kind === 'enter') moveCount(1);
          if (e.kind === 'delete' || e.kind === 'leave') moveCount(-1);
          if (e.kind === 'delete') rowsDeleted([row.objectId]);
          if (e.kind === 'update')
            void qc.invalidateQueries({ queryKey: ['data-browser', appId, 'row', cls, row.objectId] });
        },
        onFail: (error) => setLiveStatus(error),
      },
    );
  }, [liveMode, appId, cls, where, liveApply, moveCount, rowsDeleted, qc]);

  /** After any write: the rows, this class's count and the class list's counts, fetched anew. */
  const refresh = () => {
    rows.reset();
    void count.refetch();
    void qc.invalidateQueries({ queryKey: schemasKey(appId) });
  };

  const onEdit = async (row: Row, field: string, value: unknown): Promise<boolean> => {
    if (viewpoint) {
      // Viewing as someone else: the edit is a dry run with their permissions; nothing is saved.
      const body = { [field]: value === undefined ? { __op: 'Delete' } : value };
      try {
        const answer = await viewAsApi.dryRunUpdate(appId, cls, viewpoint, row.objectId, body);
        setDryRun({ objectId: row.objectId, field, body, answer });
      } catch (err) {
        toast.error(err, 'Dry run refused');
      }
      return false;
    }
    // A permission change: its impact is reviewed first (AclChangeReview saves it).
    const typedAcl = field === 'ACL' ? asWireAcl(value) : null;
    if (typedAcl) {
      setAclTyped({ row, acl: typedAcl });
      return false;
    }
    try {
      const res = await dataApi.update(appId, cls, row.objectId, {
        [field]: value === undefined ? { __op: 'Delete' } : value,
      });
      rows.patch(row.objectId, { [field]: value, updatedAt: res.updatedAt ?? row.updatedAt });
      void qc.invalidateQueries({ queryKey: ['data-browser', appId, 'row', cls, row.objectId] });
      toast.success(`${value === undefined ? 'Unset' : 'Saved'} ${field} of ${row.objectId}`);
      return true;
    } catch (err) {
      toast.error(err, `Edit of ${field} on ${row.objectId} refused`);
      // Not found: the row was deleted elsewhere.
      if (isApiError(err) && err.code === 101) {
        rowsDeleted([row.objectId]);
        void count.refetch();
      }
      return false;
    }
  };

  useShortcutHelp('↑ ↓ ← →', 'Move between cells', 'Data browser');
  useShortcutHelp('Enter', 'Edit the focused cell', 'Data browser');
  useShortcutHelp('Ctrl+Enter', 'Save an Object, Array or ACL editor', 'Data browser');

  const indexed = indexedFields(schema);
  const rowsInClass = count.data?.count ?? schema.count ?? 0;
  const slowSort = !indexed.includes(sort.field) && rowsInClass > LARGE_CLASS_ROWS;

  const ids = [...selected];
  const btn = 'shrink-0 rounded border px-1.5 py-0.5 disabled:opacity-50';

  const addRow = async () => {
    if (needsCreateForm(cls)) return setCreating(true);
    try {
      const res = await dataApi.create(appId, cls, {});
      toast.success(`Created row ${res.objectId}`);
      refresh();
      update({ row: res.objectId });
    } catch (err) {
      toast.error(err, 'Add row refused');
    }
  };

  /** The result of a bulk write: how many rows, and the first refusals. */
  const bulkNotice = (verb: string, res: BulkAnswer) => {
    const errs = res.results.filter((r) => r.error).map((r) => `${r.error!.code}: ${r.error!.error}`);
    notify(
      res.failed === 0,
      `${verb} ${countText(res.succeeded, 'row')}`,
      res.failed ? `${res.failed} refused — ${errs.slice(0, 3).join('; ')}` : undefined,
    );
  };

  /** Sets (or, with `value` undefined, unsets) the chosen column on the selected rows. */
  const bulkSet = async (value: unknown) => {
    try {
      const res = await dataApi.bulkUpdate(
        appId,
        cls,
        ids,
        bulkField,
        value === undefined ? { __op: 'Delete' } : value,
      );
      bulkNotice(value === undefined ? `Unset ${bulkField} on` : 'Updated', res);
      refresh();
    } catch (err) {
      toast.error(err, 'Bulk edit refused');
    }
  };

  const transfer = useImportExport({
    appId,
    schema,
    classNames: schemas.map((s) => s.className),
    where,
    total: count.data?.count ?? 0,
    onImported: refresh,
    canWrite: realWrite,
  });

  return (
    <div className="flex min-h-0 flex-1">
      <div className="flex min-w-0 flex-1 flex-col">
        {viewpoint && (
          <div
            role="status"
            data-testid="viewas-banner"
            className="flex flex-wrap items-center gap-3 border-y-4 border-amber-600 bg-amber-300 px-3 py-2 text-base font-bold text-amber-950"
          >
            <span>Viewing as {viewpointName} — not as master</span>
            <span className="text-sm font-normal">
              Rows and fields are exactly what this viewpoint gets.{' '}
              {canWrite ? 'Edits are dry runs: checked with its permissions, then rolled back.' : ''}
            </span>
            <button
              type="button"
              className="ml-auto rounded border-2 border-amber-900 bg-white px-2 py-0.5 text-sm"
              onClick={() => {
                setDryRun(null);
                update({ as: null });
              }}
            >
              Back to master
            </button>
          </div>
        )}
        {/* The class and how to look at it; the actions come on one line of their own below, so
            a long class name or count never moves them. */}
        {/* Wraps rather than overflows: with the row panel open, view controls that overflowed
            were painted under the panel and could not be clicked. */}
        <div
          className="flex flex-wrap items-center gap-x-2 gap-y-1 px-2 pt-2 text-sm"
          data-testid="class-header"
        >
          <h1 className="max-w-[40%] shrink-0 truncate text-base font-semibold" title={cls}>
            {cls}
          </h1>
          <span
            className={`min-w-0 truncate ${count.error ? 'text-red-600' : 'text-gray-500'}`}
            data-testid="row-count"
          >
            {count.data
              ? countText(count.data.count, 'row')
              : count.error
                ? `count refused: ${errorText(count.error)}`
                : 'counting…'}
          </span>
          {liveMode && !viewpoint && (
            <span data-testid="live-status" className="shrink-0 text-xs text-slate-500">
              {liveStatus}
            </span>
          )}
          <span className="ml-auto flex min-w-0 flex-wrap items-center gap-2">
            <span className="flex items-center gap-1">
              View as
              <ViewpointPicker
                key={asText}
                appId={appId}
                label="view as"
                value={viewpoint}
                onChange={(vp) => update({ as: viewpointParam(vp) })}
              />
            </span>
            <button
              type="button"
              className={btn}
              aria-pressed={comparing}
              onClick={() => {
                setCompareSides([null, viewpoint]);
                setComparing(!comparing);
              }}
            >
              Compare viewpoints
            </button>
            <button
              type="button"
              className={btn}
              onClick={() => setWhy({ operation: 'find', viewpoint, objectId: activeRow ?? undefined })}
            >
              Why?
            </button>
          </span>
        </div>
        <div
          className="flex flex-nowrap items-center gap-1.5 overflow-x-auto border-b p-2 text-sm"
          data-testid="class-toolbar"
        >
          <button
            type="button"
            className={btn}
            onClick={() => setPanel(panel === 'filter' ? 'none' : 'filter')}
          >
            Filter{hasFilter ? ' •' : ''}
          </button>
          <button
            type="button"
            className={btn}
            onClick={() => setPanel(panel === 'columns' ? 'none' : 'columns')}
          >
            Columns
          </button>
          {realWrite && (
            <button
              type="button"
              className={btn}
              onClick={() => setPanel(panel === 'schema' ? 'none' : 'schema')}
            >
              Schema
            </button>
          )}
          <button type="button" className={btn} onClick={refresh} aria-label="Refresh" title="Refresh">
            ↻
          </button>
          {!viewpoint && (
            <label className="flex shrink-0 items-center gap-1 text-sm">
              <input type="checkbox" checked={liveMode} onChange={(e) => setLiveMode(e.target.checked)} />
              Live
            </label>
          )}
          {realWrite && (
            <>
              <button
                type="button"
                className={btn}
                disabled={ids.length === 0}
                onClick={() => setAclRows(rows.loadedRows().filter((r) => selected.has(r.objectId)))}
              >
                ACL {ids.length || ''}
              </button>
              <button type="button" className={btn} onClick={addRow}>
                Add row
              </button>
              <button
                type="button"
                className={btn}
                disabled={ids.length === 0}
                onClick={async () => {
                  const copies = rows
                    .loadedRows()
                    .filter((r) => selected.has(r.objectId))
                    .map((row) => {
                      const fields: Record<string, unknown> = {};
                      for (const [k, v] of Object.entries(row))
                        if (
                          !['objectId', 'createdAt', 'updatedAt'].includes(k) &&
                          typeOf(schema, k) !== 'Relation'
                        )
                          fields[k] = v;
                      return fields;
                    });
                  try {
                    // One bulk create: one audit entry for the whole clone.
                    bulkNotice('Cloned', await dataApi.bulkCreate(appId, cls, copies));
                  } catch (err) {
                    toast.error(err, 'Clone refused');
                  }
                  refresh();
                }}
              >
                Clone {ids.length || ''}
              </button>
              <button
                type="button"
                className={`${btn} text-red-700`}
                disabled={ids.length === 0}
                onClick={async () => {
                  if (
                    !window.confirm(
                      `Delete ${ids.length} selected ${ids.length === 1 ? 'row' : 'rows'} of ${cls}?`,
                    )
                  )
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
                }}
              >
                Delete {ids.length || ''}
              </button>
            </>
          )}
          {transfer.controls}
        </div>
        {realWrite && ids.length > 0 && (
          <div className="flex flex-wrap items-center gap-1 border-b p-2 text-sm" data-testid="selection-bar">
            Set
            <select
              aria-label="bulk edit column"
              className="rounded border dark:bg-gray-800"
              value={bulkField}
              onChange={(e) => setBulkField(e.target.value)}
            >
              <option value="">column…</option>
              {columns
                .filter((c) => isEditableField(cls, c, typeOf(schema, c)))
                .map((c) => (
                  <option key={c}>{c}</option>
                ))}
            </select>
            <input
              aria-label="bulk edit value"
              className="w-32 rounded border px-1 dark:bg-gray-800"
              value={bulkValue}
              onChange={(e) => setBulkValue(e.target.value)}
            />
            <button
              type="button"
              className={btn}
              disabled={!bulkField}
              onClick={() => {
                const r = parseEdit(
                  typeOf(schema, bulkField),
                  bulkValue,
                  schema.fields[bulkField]?.targetClass,
                );
                if (!r.ok) return notify(false, 'Bulk edit', r.error);
                void bulkSet(r.value);
              }}
            >
              on {countText(ids.length, 'row')}
            </button>
            <button
              type="button"
              className={btn}
              disabled={!bulkField}
              onClick={() => {
                const what = `${bulkField} on ${countText(ids.length, 'selected row')} of ${cls}`;
                if (window.confirm(`Remove the value of ${what}?`)) void bulkSet(undefined);
              }}
            >
              Unset on {countText(ids.length, 'row')}
            </button>
          </div>
        )}
        {transfer.status}
        {realWrite && ids.length > 0 && <RunOnRowsBar appId={appId} className={cls} objectIds={ids} />}
        {panel === 'filter' && (
          <FilterBuilder
            key={whereText ?? ''}
            schema={schema}
            columns={columns}
            where={where}
            typed={typedFilter?.whereText === whereText ? typedFilter.text : undefined}
            refusal={hasFilter ? (rows.error ?? (count.error ? errorText(count.error) : null)) : null}
            onApply={(w, typed) => {
              const text = Object.keys(w).length ? JSON.stringify(w) : null;
              setTypedFilter(typed !== undefined && text ? { whereText: text, text: typed } : null);
              update({ where: text });
            }}
            saved={saved.data?.results ?? []}
            me={me}
            canSave={realWrite}
            onSave={async (name, w) => {
              try {
                await dataApi.saveFilter(appId, cls, name, w);
                toast.success(`Saved filter ${name}`);
                await qc.invalidateQueries({ queryKey: savedKey });
              } catch (err) {
                toast.error(err, 'Saving the filter refused');
              }
            }}
            onDelete={async (f) => {
              try {
                await dataApi.deleteFilter(appId, cls, f.id);
                await qc.invalidateQueries({ queryKey: savedKey });
              } catch (err) {
                toast.error(err, 'Deleting the filter refused');
              }
            }}
            onShare={async (f, shared) => {
              try {
                await dataApi.shareFilter(appId, cls, f.id, shared);
                toast.success(shared ? `Shared filter ${f.name}` : `Filter ${f.name} is yours only`);
                await qc.invalidateQueries({ queryKey: savedKey });
              } catch (err) {
                toast.error(err, 'Sharing the filter refused');
              }
            }}
          />
        )}
        {panel === 'columns' && (
          <div className="flex flex-wrap gap-3 border-b p-2 text-sm">
            {columns.map((c) => (
              <label key={c} className="flex items-center gap-1">
                <input
                  type="checkbox"
                  checked={!prefs.hidden.includes(c)}
                  onChange={(e) =>
                    setPrefs({
                      ...prefs,
                      hidden: e.target.checked ? prefs.hidden.filter((x) => x !== c) : [...prefs.hidden, c],
                    })
                  }
                />
                {c}
              </label>
            ))}
            <button
              type="button"
              className="underline"
              onClick={() => setPrefs({ order: [], hidden: [], pinned: [], widths: {} })}
            >
              reset layout
            </button>
          </div>
        )}
        {panel === 'schema' && realWrite && (
          <SchemaPanel
            appId={appId}
            schema={schema}
            classNames={schemas.map((s) => s.className)}
            run={run}
            onDropped={onDropped}
          />
        )}
        {slowSort && (
          <div
            className="flex flex-wrap items-center gap-2 border-b bg-amber-50 p-2 text-sm dark:bg-amber-950"
            data-testid="sort-notice"
          >
            <span>
              No index on {sort.field}: sorting {rowsInClass.toLocaleString()} rows reads the whole class for
              every page, so rows can take seconds to appear.
            </span>
            {realWrite && (
              <button
                type="button"
                className={btn}
                onClick={() =>
                  run(`Create index ${sort.field}_1`, () =>
                    dataApi.addIndex(appId, cls, `${sort.field}_1`, { [sort.field]: 1 }),
                  )
                }
              >
                Create index on {sort.field}
              </button>
            )}
          </div>
        )}
        {rows.error && (
          <p className="p-2 text-red-600" role="alert" data-testid="rows-error">
            {rows.error}
            {viewpoint && (
              <button
                type="button"
                className="ml-2 underline"
                onClick={() => setWhy({ operation: 'find', viewpoint })}
              >
                Why?
              </button>
            )}
          </p>
        )}
        {dryRun && viewpoint && (
          <div
            className={`flex flex-wrap items-center gap-2 border-b p-2 text-sm ${dryRun.answer.status < 300 ? 'bg-emerald-50 dark:bg-emerald-950' : 'bg-red-50 dark:bg-red-950'}`}
            data-testid="dry-run-result"
            data-status={dryRun.answer.status}
          >
            <span>
              Dry run as {viewpointName}: the edit of {dryRun.field} on {dryRun.objectId}{' '}
              {dryRun.answer.status < 300
                ? 'would be saved.'
                : `would be refused — ${errorText(dryRunError(dryRun.answer))}.`}{' '}
              Nothing was saved.
            </span>
            {dryRun.answer.status >= 300 && (
              <button
                type="button"
                className={btn}
                onClick={() =>
                  setWhy({ operation: 'update', objectId: dryRun.objectId, body: dryRun.body, viewpoint })
                }
              >
                Why?
              </button>
            )}
            <button
              type="button"
              className="ml-auto"
              aria-label="dismiss dry run"
              onClick={() => setDryRun(null)}
            >
              ✕
            </button>
          </div>
        )}
        {comparing ? (
          <CompareView
            appId={appId}
            schema={schema}
            columns={columns}
            where={where}
            left={compareSides[0]}
            right={compareSides[1]}
            onChange={(l, r) => setCompareSides([l, r])}
            onWhy={setWhy}
          />
        ) : (
          <div className="relative flex min-h-0 flex-1 flex-col">
            <Grid
              appId={appId}
              className={cls}
              schema={schema}
              columns={columns}
              sortable={sortable}
              rows={rows}
              total={total}
              sort={sort}
              onSort={(s) => update({ sort: sortText(s) === 'objectId' ? null : sortText(s) })}
              prefs={prefs}
              setPrefs={setPrefs}
              selected={selected}
              setSelected={setSelected}
              activeRow={activeRow}
              onOpenRow={(id) => update({ row: id })}
              onEdit={onEdit}
              canWrite={canWrite}
              viewpoint={viewpoint}
              onWhyCell={(objectId, field) => setWhy({ operation: 'get', objectId, field, viewpoint })}
            />
            {empty && (
              <div
                className="absolute inset-x-0 top-10 flex flex-col items-center gap-2 p-6 text-sm text-gray-600"
                data-testid="empty-class"
              >
                <p className="text-base font-semibold">No rows</p>
                {hasFilter ? (
                  <p>None of the rows of {cls} match this filter.</p>
                ) : (
                  realWrite && (
                    <div className="flex gap-2">
                      <button type="button" className={btn} onClick={addRow}>
                        Add the first row
                      </button>
                      {transfer.importInput('import a file', 'Import a file', `${btn} cursor-pointer`)}
                    </div>
                  )
                )}
              </div>
            )}
          </div>
        )}
      </div>
      {activeRow && (
        <RowDetail
          key={activeRow}
          appId={appId}
          className={cls}
          objectId={activeRow}
          schema={schema}
          schemas={schemas}
          canWrite={canWrite}
          viewpoint={viewpoint}
          onEdit={onEdit}
          onClose={() => update({ row: null })}
          onEditAcl={realWrite ? (row) => setAclRows([row]) : undefined}
          onWhy={setWhy}
          onGone={() => {
            rowsDeleted([activeRow]);
            void count.refetch();
          }}
        />
      )}
      {why && <WhyDialog appId={appId} className={cls} initial={why} onClose={() => setWhy(null)} />}
      {aclRows && (
        <AclEditor
          appId={appId}
          className={cls}
          rows={aclRows}
          onClose={() => setAclRows(null)}
          onSaved={() => {
            setAclRows(null);
            refresh();
            void qc.invalidateQueries({ queryKey: ['data-browser', appId, 'row', cls] });
          }}
        />
      )}
      {aclTyped && (
        <AclChangeReview
          appId={appId}
          className={cls}
          row={aclTyped.row}
          acl={aclTyped.acl}
          onClose={() => setAclTyped(null)}
          onSaved={(acl) => {
            setAclTyped(null);
            rows.patch(aclTyped.row.objectId, { ACL: acl });
            void qc.invalidateQueries({ queryKey: ['data-browser', appId, 'row', cls] });
          }}
        />
      )}
      {creating && (
        <CreateRowDialog
          appId={appId}
          className={cls}
          onClose={() => setCreating(false)}
          onCreated={(id) => {
            setCreating(false);
            refresh();
            update({ row: id });
          }}
        />
      )}
    </div>
  );
}

/** The refusal in a dry run's answer, as an error for `errorText`. */
function dryRunError(answer: Evaluation): Error {
  const b = (answer.body ?? {}) as { code?: number; error?: string };
  return new Error(`Error ${b.code ?? answer.status}: ${b.error ?? 'refused'}`);
}

/**
 * One class: its header, toolbar, panels and notices over the grid (or the viewpoint comparison),
 * the row panel beside it, and the dialogs. The state lives in hooks by concern: the address
 * (`useClassUrl`), the rows (`useRowPages`) and their count (`useClassCount`), live mode, the
 * selection and its bulk actions, what is open (`useClassPanels`), one edit (`useRowEdit`).
 */
import { useQueryClient } from '@tanstack/react-query';
import { useMemo } from 'react';
import { FilterBuilder } from '../../../components/filter-builder.tsx';
import { errorText } from '../../../lib/api.ts';
import { HISTORY_PARAM } from '../../../lib/row-history.ts';
import { useSession } from '../../../lib/session.ts';
import { useShortcutHelp } from '../../../lib/shortcuts.ts';
import { toast } from '../../../lib/toast.ts';
import { columnsOf, indexedFields, type SchemaDoc, typeOf } from '../../../lib/wire.ts';
import { dataApi } from '../api/bff.ts';
import { dataBrowserKeys } from '../api/query-keys.ts';
import { useBulkActions } from '../hooks/use-bulk-actions.ts';
import { useClassCount } from '../hooks/use-class-count.ts';
import { useClassPanels } from '../hooks/use-class-panels.ts';
import { useClassUrl } from '../hooks/use-class-url.ts';
import { useColumnPrefs } from '../hooks/use-column-prefs.ts';
import { useLiveMode } from '../hooks/use-live-mode.ts';
import { useRowEdit } from '../hooks/use-row-edit.ts';
import { useRowPages } from '../hooks/use-row-pages.ts';
import { useRowsDeleted } from '../hooks/use-rows-deleted.ts';
import { useSavedFilters } from '../hooks/use-saved-filters.ts';
import { sortText } from '../lib/keyset.ts';
import { viewpointParam } from '../lib/viewpoint.ts';
import { BulkActionButtons, BulkEditBar } from './bulk-actions.tsx';
import { ClassDialogs } from './class-dialogs.tsx';
import { ClassHeader } from './class-header.tsx';
import { DryRunResult, LARGE_CLASS_ROWS, RowsError, SlowSortNotice } from './class-notices.tsx';
import { ClassToolbar } from './class-toolbar.tsx';
import { ColumnChooser } from './column-chooser.tsx';
import { CompareView } from './compare-view.tsx';
import { needsCreateForm } from './create-row-dialog.tsx';
import { EmptyClass } from './empty-class.tsx';
import { Grid } from './grid.tsx';
import { useImportExport } from './import-export.tsx';
import { RecentChanges } from './recent-changes.tsx';
import { RowDetail } from './row-detail.tsx';
import { RunOnRowsBar } from './run-on-rows.tsx';
import { SchemaPanel } from './schema-panel.tsx';
import { ViewAsBanner } from './viewas-banner.tsx';
import { useViewpointName } from './viewpoint-picker.tsx';

export interface ClassViewProps {
  appId: string;
  schema: SchemaDoc;
  schemas: SchemaDoc[];
  /** Runs a schema change, says how it went, and fetches the class list anew. */
  run(label: string, fn: () => Promise<unknown>): Promise<boolean>;
  canWrite: boolean;
  onDropped(): void;
}

export function ClassView({ appId, schema, schemas, run, canWrite, onDropped }: ClassViewProps) {
  const cls = schema.className;
  const qc = useQueryClient();
  const me = useSession().data?.username ?? '';
  const url = useClassUrl(schema);
  const { where, whereText, hasFilter, sort, sortable, activeRow, viewpoint, update } = url;
  const columns = useMemo(() => columnsOf(schema), [schema]);
  const viewpointName = useViewpointName(appId, viewpoint);
  /** Real writes: never while viewing as someone else (edits there are dry runs). */
  const realWrite = canWrite && !viewpoint;
  const rows = useRowPages(appId, cls, where, sort, typeOf(schema, sort.field), viewpoint);
  const panels = useClassPanels(hasFilter, viewpoint);
  const { setWhy } = panels;
  const [prefs, setPrefs] = useColumnPrefs(appId, cls);
  const filters = useSavedFilters(appId, cls);
  const { count, moveCount } = useClassCount(appId, cls, url);

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

  const rowsDeleted = useRowsDeleted(rows.remove, activeRow, url.closeRow);
  const live = useLiveMode({ appId, cls, where, applyToRows: rows.live, moveCount, rowsDeleted });

  /** After any write: the rows, this class's count and the class list's counts, fetched anew. */
  const refresh = () => {
    rows.reset();
    void count.refetch();
    void qc.invalidateQueries({ queryKey: dataBrowserKeys.schemas(appId) });
  };
  /** A row found deleted by a write or by its panel: it leaves, and the count is asked anew. */
  const rowGone = (objectId: string) => {
    rowsDeleted([objectId]);
    void count.refetch();
  };
  const onEdit = useRowEdit({ appId, cls, viewpoint, rows, panels, rowGone });

  useShortcutHelp('↑ ↓ ← →', 'Move between cells', 'Data browser');
  useShortcutHelp('Enter', 'Edit the focused cell', 'Data browser');
  useShortcutHelp('Ctrl+Enter', 'Save an Object, Array or ACL editor', 'Data browser');

  const rowsInClass = count.data?.count ?? schema.count ?? 0;
  const slowSort = !indexedFields(schema).includes(sort.field) && rowsInClass > LARGE_CLASS_ROWS;
  const bulk = useBulkActions({ appId, schema, rows, refresh, rowsDeleted });

  const addRow = async () => {
    if (needsCreateForm(cls)) return panels.setCreating(true);
    try {
      const res = await dataApi.create(appId, cls, {});
      toast.success(`Created row ${res.objectId}`);
      refresh();
      update({ row: res.objectId });
    } catch (err) {
      toast.error(err, 'Add row refused');
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
  const { dryRun, panel } = panels;

  return (
    <div className="flex min-h-0 flex-1">
      <div className="flex min-w-0 flex-1 flex-col">
        {viewpoint && (
          <ViewAsBanner
            viewpointName={viewpointName}
            canWrite={canWrite}
            onBack={() => {
              panels.setDryRun(null);
              update({ as: null });
            }}
          />
        )}
        <ClassHeader
          appId={appId}
          cls={cls}
          count={count}
          liveStatus={live.on && !viewpoint ? live.status : null}
          viewpoint={viewpoint}
          asText={url.asText}
          onViewAs={(vp) => update({ as: viewpointParam(vp) })}
          comparing={panels.comparing}
          onToggleCompare={() => panels.toggleCompare(viewpoint)}
          onWhy={() => setWhy({ operation: 'find', viewpoint, objectId: activeRow ?? undefined })}
        />
        <ClassToolbar
          togglePanel={panels.togglePanel}
          hasFilter={hasFilter}
          realWrite={realWrite}
          onRefresh={refresh}
          live={viewpoint ? null : live}
        >
          {realWrite && <BulkActionButtons bulk={bulk} onEditAcl={panels.setAclRows} onAddRow={addRow} />}
          {transfer.controls}
        </ClassToolbar>
        {realWrite && bulk.ids.length > 0 && <BulkEditBar bulk={bulk} schema={schema} columns={columns} />}
        {transfer.status}
        {realWrite && bulk.ids.length > 0 && (
          <RunOnRowsBar appId={appId} className={cls} objectIds={bulk.ids} />
        )}
        {panel === 'filter' && (
          <FilterBuilder
            key={whereText ?? ''}
            schema={schema}
            columns={columns}
            where={where}
            typed={panels.typedFilter?.whereText === whereText ? panels.typedFilter.text : undefined}
            refusal={hasFilter ? (rows.error ?? (count.error ? errorText(count.error) : null)) : null}
            onApply={(w, typed) => {
              const text = Object.keys(w).length ? JSON.stringify(w) : null;
              panels.setTypedFilter(typed !== undefined && text ? { whereText: text, text: typed } : null);
              update({ where: text });
            }}
            saved={filters.saved}
            me={me}
            canSave={realWrite}
            onSave={filters.save}
            onDelete={filters.remove}
            onShare={filters.share}
          />
        )}
        {panel === 'columns' && <ColumnChooser columns={columns} prefs={prefs} setPrefs={setPrefs} />}
        {panel === 'changes' && (
          <RecentChanges
            appId={appId}
            schema={schema}
            onOpenHistory={(id) => update({ row: id, [HISTORY_PARAM]: '1' })}
          />
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
          <SlowSortNotice
            field={sort.field}
            rowsInClass={rowsInClass}
            onCreateIndex={
              realWrite
                ? () =>
                    run(`Create index ${sort.field}_1`, () =>
                      dataApi.addIndex(appId, cls, `${sort.field}_1`, { [sort.field]: 1 }),
                    )
                : undefined
            }
          />
        )}
        {rows.error && (
          <RowsError
            error={rows.error}
            onWhy={viewpoint ? () => setWhy({ operation: 'find', viewpoint }) : undefined}
          />
        )}
        {dryRun && viewpoint && (
          <DryRunResult
            dryRun={dryRun}
            viewpointName={viewpointName}
            onWhy={() =>
              setWhy({ operation: 'update', objectId: dryRun.objectId, body: dryRun.body, viewpoint })
            }
            onDismiss={() => panels.setDryRun(null)}
          />
        )}
        {panels.comparing ? (
          <CompareView
            appId={appId}
            schema={schema}
            columns={columns}
            where={where}
            left={panels.compareSides[0]}
            right={panels.compareSides[1]}
            onChange={(l, r) => panels.setCompareSides([l, r])}
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
              selected={bulk.selected}
              setSelected={bulk.setSelected}
              activeRow={activeRow}
              onOpenRow={(id) => update({ row: id })}
              onEdit={onEdit}
              canWrite={canWrite}
              viewpoint={viewpoint}
              onWhyCell={(objectId, field) => setWhy({ operation: 'get', objectId, field, viewpoint })}
            />
            {empty && (
              <EmptyClass
                cls={cls}
                hasFilter={hasFilter}
                onAddRow={realWrite ? addRow : undefined}
                importInput={transfer.importInput}
              />
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
          onClose={() => update({ row: null, [HISTORY_PARAM]: null })}
          tab={url.rowHistory && !viewpoint ? 'history' : 'fields'}
          onTab={(tab) => update({ [HISTORY_PARAM]: tab === 'history' ? '1' : null })}
          onHistoryChanged={refresh}
          onEditAcl={realWrite ? (row) => panels.setAclRows([row]) : undefined}
          onWhy={setWhy}
          onGone={() => rowGone(activeRow)}
        />
      )}
      <ClassDialogs
        appId={appId}
        cls={cls}
        panels={panels}
        rows={rows}
        onCreated={(id) => {
          refresh();
          update({ row: id });
        }}
        onAclSaved={refresh}
      />
    </div>
  );
}

/**
 * Export and import. A CSV file is read whole first: a file that is not well-formed is refused
 * with its line and the reason before anything is written (no column added, no row sent), and
 * its row count is the import's total. Then the start of the file is read: columns the class
 * does not have get a proposed type in a mapping step (or are skipped), and objectIds in the
 * file may be kept. Then the file streams to the bff in chunks of rows, with progress in rows
 * written and a summary of the rejected rows by file line. The bff audits the import as one entry.
 *
 * `useImportExport` gives the toolbar its buttons, the page its status line (progress, errors,
 * the summary) apart from them, and any other place a file input of its own (the empty class).
 */
import { type ReactNode, useState } from 'react';
import { Dialog } from '../../../components/ui/dialog.tsx';
import { errorText } from '../../../lib/api.ts';
import type { Where } from '../../../lib/filter.ts';
import { countText } from '../../../lib/plural.ts';
import { FIELD_TYPES, type FieldType, type SchemaDoc, SYSTEM_FIELDS } from '../../../lib/wire.ts';
import { dataApi, type ImportDone, type ImportStart } from '../api/bff.ts';
import { CsvError } from '../lib/csv.ts';
import { inferColumn, parseDimension, VECTOR_DIMENSION_MAX, vectorDimension } from '../lib/infer.ts';
import { checkCsv, exportRows, type ImportProgress, importStream, sampleOf } from '../lib/transfer.ts';

/** A control of the class toolbar. */
const TOOL = 'shrink-0 rounded border px-1.5 py-0.5 disabled:opacity-50';

/** Bytes read from the start of a file to find its columns and guess their types. */
const SAMPLE_BYTES = 256 * 1024;

interface NewColumn {
  name: string;
  type: FieldType | 'skip';
  targetClass?: string;
  /** Vector columns: the dimension as typed (proposed from the sampled arrays when they agree). */
  dimension: string;
}

interface Pending {
  file: File;
  format: 'csv' | 'json';
  columns: NewColumn[];
  hasObjectId: boolean;
  keepObjectIds: boolean;
  /** Data rows of a CSV file (counted before the import); null for JSON. */
  rows: number | null;
}

interface Progress {
  label: string;
  done: number;
  /** The total, when known (a CSV import, an export): otherwise the bar is indeterminate. */
  of: number | null;
  unit: string;
}

export interface ImportExportProps {
  appId: string;
  schema: SchemaDoc;
  classNames: string[];
  where: Where;
  total: number;
  onImported(): void;
  canWrite: boolean;
}

export interface ImportExportParts {
  /** Export CSV, Export JSON and (for writers) the import file input: for the toolbar. */
  controls: ReactNode;
  /** Progress, errors, the import summary and the mapping dialog: under the toolbar. */
  status: ReactNode;
  /** A file input of its own that starts an import, labelled `label` (for writers only). */
  importInput(label: string, text: string, className?: string): ReactNode;
}

export function useImportExport({
  appId,
  schema,
  classNames,
  where,
  total,
  onImported,
  canWrite,
}: ImportExportProps): ImportExportParts {
  const cls = schema.className;
  const [progress, setProgress] = useState<Progress | null>(null);
  const [checking, setChecking] = useState<string | null>(null);
  const [summary, setSummary] = useState<(ImportDone & { seconds: number }) | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [pending, setPending] = useState<Pending | null>(null);

  const doExport = async (format: 'csv' | 'json') => {
    setError(null);
    const label = `Exporting ${format.toUpperCase()}`;
    setProgress({ label, done: 0, of: total, unit: 'rows read' });
    try {
      const blob = await exportRows(
        format,
        schema,
        where,
        async (req) => (await dataApi.find(appId, cls, req)).results,
        (done) => setProgress({ label, done, of: Math.max(total, done), unit: 'rows read' }),
      );
      const url = URL.createObjectURL(blob);
      const a = document.createElement('a');
      a.href = url;
      a.download = `${cls}.${format}`;
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
    } catch (err) {
      setError(errorText(err));
    } finally {
      setProgress(null);
    }
  };

  /** Reads the start of the file; asks about new columns and objectIds before writing anything. */
  const prepare = async (file: File) => {
    setError(null);
    setSummary(null);
    const format: Pending['format'] =
      /\.json$/i.test(file.name) || file.type.includes('json') ? 'json' : 'csv';
    let rows: number | null = null;
    if (format === 'csv') {
      setChecking(file.name);
      try {
        rows = (await checkCsv(file.stream())).rows;
      } catch (err) {
        const why = err instanceof CsvError ? err.message : errorText(err);
        return setError(`Import refused: ${file.name}, ${why}. Nothing was written.`);
      } finally {
        setChecking(null);
      }
    }
    const sample = sampleOf(format, await file.slice(0, SAMPLE_BYTES).text());
    const system = SYSTEM_FIELDS as readonly string[];
    const columns: NewColumn[] = sample.columns
      .filter((c) => c !== '' && !(c in schema.fields) && !system.includes(c))
      .map((name) => {
        const values = sample.values[name] ?? [];
        const guess = inferColumn(values, format);
        const dim = vectorDimension(values, format);
        return {
          name,
          type: guess.type,
          targetClass: guess.targetClass,
          dimension: dim === undefined ? '' : String(dim),
        };
      });
    const next = {
      file,
      format,
      columns,
      hasObjectId: sample.columns.includes('objectId'),
      keepObjectIds: false,
      rows,
    };
    if (columns.length === 0 && !next.hasObjectId) void run(next);
    else setPending(next);
  };

  const run = async (p: Pending) => {
    setPending(null);
    const { file, format } = p;
    const addFields: NonNullable<ImportStart['addFields']> = {};
    for (const c of p.columns) {
      if (c.type === 'skip') continue;
      const dim = parseDimension(c.dimension);
      addFields[c.name] = c.targetClass
        ? { type: c.type, targetClass: c.targetClass }
        : c.type === 'Vector' && dim.ok
          ? { type: c.type, dimension: dim.value }
          : { type: c.type };
    }
    const skip = new Set(p.columns.filter((c) => c.type === 'skip').map((c) => c.name));
    const label = `Importing ${file.name}`;
    setProgress({ label, done: 0, of: p.rows, unit: 'rows written' });
    const started = performance.now();
    let importId: string | null = null;
    try {
      importId = (
        await dataApi.startImport(appId, cls, {
          file: file.name,
          format,
          keepObjectIds: p.keepObjectIds,
          addFields,
        })
      ).importId;
      const id = importId;
      const onProgress = (pr: ImportProgress) =>
        setProgress({ label, done: pr.written, of: p.rows, unit: 'rows written' });
      const result = await importStream(
        {
          format,
          schema: { ...schema, fields: { ...schema.fields, ...addFields } },
          skip,
          keepObjectIds: p.keepObjectIds,
        },
        file.stream(),
        (rows) => dataApi.importRows(appId, cls, id, rows),
        onProgress,
      );
      const done = await dataApi.finishImport(appId, cls, id, result);
      importId = null;
      setSummary({ ...done, seconds: (performance.now() - started) / 1000 });
    } catch (err) {
      setError(`Import stopped: ${errorText(err)}`);
      // What was written is still audited (the bff also finishes an abandoned import by itself).
      if (importId)
        await dataApi
          .finishImport(appId, cls, importId, {
            created: 0,
            rows: 0,
            unread: [],
            unreadCount: 0,
            refused: 0,
            unknownColumns: [],
          })
          .catch(() => undefined);
    } finally {
      setProgress(null);
      onImported();
    }
  };

  const setColumn = (i: number, c: Partial<NewColumn>) =>
    pending &&
    setPending({ ...pending, columns: pending.columns.map((x, j) => (j === i ? { ...x, ...c } : x)) });
  const input = 'rounded border px-1 dark:bg-gray-800';
  /** Mapped Vector columns without a usable dimension: the import cannot start. */
  const badDimensions = (pending?.columns ?? []).filter(
    (c) => c.type === 'Vector' && !parseDimension(c.dimension).ok,
  );

  const fileInput = (label: string, text: string, className = 'cursor-pointer rounded border px-2') => (
    <label className={className}>
      {text}
      <input
        type="file"
        accept=".csv,.json,.ndjson,text/csv,application/json"
        className="hidden"
        aria-label={label}
        disabled={!!progress || !!checking}
        onChange={(e) => {
          const f = e.target.files?.[0];
          e.target.value = '';
          if (f) void prepare(f);
        }}
      />
    </label>
  );

  const controls = (
    <>
      <span className="shrink-0 text-gray-500">Export</span>
      <button
        type="button"
        className={TOOL}
        aria-label="Export CSV"
        disabled={!!progress}
        onClick={() => doExport('csv')}
      >
        CSV
      </button>
      <button
        type="button"
        className={TOOL}
        aria-label="Export JSON"
        disabled={!!progress}
        onClick={() => doExport('json')}
      >
        JSON
      </button>
      {canWrite && fileInput('import file', 'Import', `${TOOL} cursor-pointer`)}
    </>
  );

  const busy = progress || checking || error || summary || pending;
  const status = busy && (
    <div className="flex flex-wrap items-center gap-2 border-b p-2 text-sm">
      {checking && (
        <span data-testid="transfer-check" className="flex items-center gap-1">
          Reading {checking}
          <progress />
        </span>
      )}
      {progress && (
        <span className="flex items-center gap-1" data-testid="transfer-progress" data-done={progress.done}>
          {progress.label}
          {progress.of === null ? (
            <progress />
          ) : (
            <progress max={Math.max(1, progress.of)} value={progress.done} />
          )}
          {progress.of === null
            ? `${progress.done.toLocaleString()} ${progress.unit}`
            : `${progress.done.toLocaleString()} of ${progress.of.toLocaleString()} ${progress.unit}`}
        </span>
      )}
      {error && (
        <span className="text-red-600" role="alert">
          {error}
        </span>
      )}
      {summary && (
        <div className="w-full rounded border p-1" data-testid="import-summary">
          Imported {countText(summary.created, 'row')}; rejected {summary.rejectedCount.toLocaleString()}.
          <span className="ml-2 text-xs text-gray-500">
            {summary.seconds.toFixed(1)} s,{' '}
            {Math.round(summary.created / Math.max(summary.seconds, 0.001)).toLocaleString()} rows/s
          </span>
          <button
            type="button"
            className="ml-2 text-xs"
            aria-label="close import summary"
            onClick={() => setSummary(null)}
          >
            ✕
          </button>
          {summary.unknownColumns.length > 0 && (
            <p className="text-xs text-amber-800 dark:text-amber-300" data-testid="unknown-columns">
              Left out, {cls} has no column for:{' '}
              {summary.unknownColumns
                .map(
                  (u) => `${u.name} (first on line ${u.line.toLocaleString()}, ${countText(u.rows, 'row')})`,
                )
                .join(', ')}
              . Add the column and import those rows again to keep them.
            </p>
          )}
          {summary.rejected.length > 0 && (
            <ul className="max-h-32 overflow-auto text-xs text-red-700" data-testid="rejected-rows">
              {summary.rejected.map((r) => (
                <li key={r.line}>
                  line {r.line}: {r.reason}
                </li>
              ))}
              {summary.rejectedCount > summary.rejected.length && (
                <li>…and {(summary.rejectedCount - summary.rejected.length).toLocaleString()} more</li>
              )}
            </ul>
          )}
        </div>
      )}
      {pending && (
        <Dialog
          open
          wide
          title={`Import ${pending.file.name} into ${cls}`}
          onClose={() => setPending(null)}
          footer={
            <>
              <button type="button" className="rounded border px-3 py-1" onClick={() => setPending(null)}>
                Cancel
              </button>
              <button
                type="button"
                className="rounded bg-blue-600 px-3 py-1 text-white disabled:opacity-50"
                disabled={badDimensions.length > 0}
                onClick={() => void run(pending)}
              >
                Import
              </button>
            </>
          }
        >
          <div className="space-y-3 text-sm" data-testid="import-mapping">
            {pending.columns.length > 0 && (
              <>
                <p>
                  {cls} has no column for {pending.columns.length === 1 ? 'this field' : 'these fields'} of
                  the file. Each is added with the type below (guessed from the first rows), or skipped.
                </p>
                <table className="w-full">
                  <tbody>
                    {pending.columns.map((c, i) => (
                      <tr key={c.name} data-new-column={c.name}>
                        <td className="pr-2 font-mono">{c.name}</td>
                        <td>
                          <select
                            aria-label={`type of ${c.name}`}
                            className={input}
                            value={c.type}
                            onChange={(e) => {
                              const type = e.target.value as NewColumn['type'];
                              const needsTarget = type === 'Pointer' || type === 'Relation';
                              setColumn(i, {
                                type,
                                targetClass: needsTarget ? (c.targetClass ?? classNames[0]) : undefined,
                              });
                            }}
                          >
                            {FIELD_TYPES.filter((t) => t !== 'Relation').map((t) => (
                              <option key={t}>{t}</option>
                            ))}
                            <option value="skip">skip this column</option>
                          </select>
                          {c.type === 'Vector' && (
                            <input
                              type="number"
                              min={1}
                              max={VECTOR_DIMENSION_MAX}
                              aria-label={`dimension of ${c.name}`}
                              placeholder="dimension"
                              className={`${input} ml-1 w-24`}
                              value={c.dimension}
                              onChange={(e) => setColumn(i, { dimension: e.target.value })}
                            />
                          )}
                          {c.type === 'Pointer' && (
                            <select
                              aria-label={`target class of ${c.name}`}
                              className={`${input} ml-1`}
                              value={c.targetClass}
                              onChange={(e) => setColumn(i, { targetClass: e.target.value })}
                            >
                              {[...new Set([...(c.targetClass ? [c.targetClass] : []), ...classNames])].map(
                                (n) => (
                                  <option key={n}>{n}</option>
                                ),
                              )}
                            </select>
                          )}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </>
            )}
            {badDimensions.length > 0 && (
              <p className="text-red-600" role="alert">
                The dimension of {badDimensions.map((c) => c.name).join(', ')} must be a whole number from 1
                to {VECTOR_DIMENSION_MAX}.
              </p>
            )}
            {pending.hasObjectId && (
              <label className="flex items-center gap-2">
                <input
                  type="checkbox"
                  checked={pending.keepObjectIds}
                  onChange={(e) => setPending({ ...pending, keepObjectIds: e.target.checked })}
                />
                Keep the objectIds from the file (rows whose objectId exists are rejected); otherwise every
                row gets a new one.
              </label>
            )}
          </div>
        </Dialog>
      )}
    </div>
  );
  return { controls, status, importInput: fileInput };
}

/**
 * Export and import. An import reads the start of the file first: columns the class does not have
 * get a proposed type in a mapping step (or are skipped), and objectIds in the file may be kept.
 * Then the file streams to the bff in chunks of rows, with progress in rows written and a summary
 * of the rejected rows by file line. The bff audits the import as one entry.
 */
import { useState } from 'react';
import { Dialog } from '../../../components/ui/dialog.tsx';
import { dataApi, errorText, type ImportDone, type ImportStart } from '../api/bff.ts';
import type { Where } from '../lib/filter.ts';
import { inferColumn, parseDimension, VECTOR_DIMENSION_MAX, vectorDimension } from '../lib/infer.ts';
import { exportRows, type ImportProgress, importStream, sampleOf } from '../lib/transfer.ts';
import { FIELD_TYPES, type FieldType, type SchemaDoc, SYSTEM_FIELDS } from '../lib/wire.ts';

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
}

interface Progress {
  label: string;
  done: number;
  of: number;
  unit: string;
}

export function ImportExport({
  appId,
  schema,
  classNames,
  where,
  total,
  onImported,
  canWrite,
}: {
  appId: string;
  schema: SchemaDoc;
  classNames: string[];
  where: Where;
  total: number;
  onImported(): void;
  canWrite: boolean;
}) {
  const cls = schema.className;
  const [progress, setProgress] = useState<Progress | null>(null);
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
    setProgress({ label, done: 0, of: 1, unit: 'rows written' });
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
        setProgress({
          label,
          done: pr.written,
          // Rows in the whole file, estimated from the rows per byte read so far.
          of: pr.bytes > 0 ? Math.max(pr.read, Math.round((pr.read / pr.bytes) * file.size)) : 1,
          unit: 'rows written',
        });
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

  return (
    <div className="flex flex-wrap items-center gap-2 text-sm">
      <button
        type="button"
        className="rounded border px-2"
        disabled={!!progress}
        onClick={() => doExport('csv')}
      >
        Export CSV
      </button>
      <button
        type="button"
        className="rounded border px-2"
        disabled={!!progress}
        onClick={() => doExport('json')}
      >
        Export JSON
      </button>
      {canWrite && (
        <label className="cursor-pointer rounded border px-2">
          Import CSV/JSON
          <input
            type="file"
            accept=".csv,.json,.ndjson,text/csv,application/json"
            className="hidden"
            aria-label="import file"
            disabled={!!progress}
            onChange={(e) => {
              const f = e.target.files?.[0];
              e.target.value = '';
              if (f) void prepare(f);
            }}
          />
        </label>
      )}
      {progress && (
        <span className="flex items-center gap-1" data-testid="transfer-progress" data-done={progress.done}>
          {progress.label}
          <progress max={Math.max(1, progress.of)} value={progress.done} />
          {progress.done.toLocaleString()} of {progress.unit === 'rows written' ? '~' : ''}
          {progress.of.toLocaleString()} {progress.unit}
        </span>
      )}
      {error && (
        <span className="text-red-600" role="alert">
          {error}
        </span>
      )}
      {summary && (
        <div className="w-full rounded border p-1" data-testid="import-summary">
          Imported {summary.created.toLocaleString()} rows; rejected {summary.rejectedCount.toLocaleString()}.
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
                  (u) =>
                    `${u.name} (first on line ${u.line.toLocaleString()}, ${u.rows.toLocaleString()} row${u.rows === 1 ? '' : 's'})`,
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
}

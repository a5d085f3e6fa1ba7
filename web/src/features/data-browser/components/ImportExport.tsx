/** Export and import buttons with a progress bar and the summary of rejected rows. */
import { useState } from 'react';
import { dataApi, errorText } from '../api/bff.ts';
import type { Where } from '../lib/filter.ts';
import { exportRows, type ImportSummary, importStream } from '../lib/transfer.ts';
import type { SchemaDoc } from '../lib/wire.ts';

export function ImportExport({
  appId,
  schema,
  where,
  total,
  onImported,
  canWrite,
}: {
  appId: string;
  schema: SchemaDoc;
  where: Where;
  total: number;
  onImported(): void;
  canWrite: boolean;
}) {
  const cls = schema.className;
  const [progress, setProgress] = useState<{ label: string; done: number; of: number } | null>(null);
  const [summary, setSummary] = useState<ImportSummary | null>(null);
  const [error, setError] = useState<string | null>(null);

  const doExport = async (format: 'csv' | 'json') => {
    setError(null);
    setProgress({ label: `Exporting ${format.toUpperCase()}`, done: 0, of: total });
    try {
      const blob = await exportRows(
        format,
        schema,
        where,
        async (req) => (await dataApi.find(appId, cls, req)).results,
        (done) =>
          setProgress({ label: `Exporting ${format.toUpperCase()}`, done, of: Math.max(total, done) }),
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

  const doImport = async (file: File) => {
    setError(null);
    setSummary(null);
    const format = /\.json$/i.test(file.name) || file.type.includes('json') ? 'json' : 'csv';
    setProgress({ label: `Importing ${file.name}`, done: 0, of: file.size });
    try {
      const s = await importStream(
        format,
        schema,
        file.stream(),
        (fields) => dataApi.create(appId, cls, fields),
        (bytes) => setProgress({ label: `Importing ${file.name}`, done: bytes, of: file.size }),
        errorText,
      );
      setSummary(s);
      onImported();
    } catch (err) {
      setError(errorText(err));
    } finally {
      setProgress(null);
    }
  };

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
            accept=".csv,.json,text/csv,application/json"
            className="hidden"
            aria-label="import file"
            disabled={!!progress}
            onChange={(e) => {
              const f = e.target.files?.[0];
              e.target.value = '';
              if (f) void doImport(f);
            }}
          />
        </label>
      )}
      {progress && (
        <span className="flex items-center gap-1" data-testid="transfer-progress">
          {progress.label}
          <progress max={Math.max(1, progress.of)} value={progress.done} />
          {progress.done.toLocaleString()}
        </span>
      )}
      {error && (
        <span className="text-red-600" role="alert">
          {error}
        </span>
      )}
      {summary && (
        <div className="w-full rounded border p-1" data-testid="import-summary">
          Imported {summary.created} rows; rejected {summary.rejectedCount}.
          <button type="button" className="ml-2 text-xs" onClick={() => setSummary(null)}>
            ✕
          </button>
          {summary.rejected.length > 0 && (
            <ul className="max-h-32 overflow-auto text-xs text-red-700">
              {summary.rejected.map((r) => (
                <li key={r.line}>
                  line {r.line}: {r.reason}
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
    </div>
  );
}

import { type FormEvent, useState } from 'react';
import { useParams } from 'react-router';
import { FileValue } from '../../components/file-value.tsx';
import { QueryState } from '../../components/query-state.tsx';
import { Button } from '../../components/ui/button.tsx';
import { Dialog } from '../../components/ui/dialog.tsx';
import { Input } from '../../components/ui/input.tsx';
import { isApiError } from '../../lib/api.ts';
import { uploadFile } from '../../lib/file-upload.ts';
import { useCanWrite } from '../../lib/session.ts';
import { toast } from '../../lib/toast.ts';
import { attachFile, type StoredFile, useDeleteFile, useForeignFileValues, useOrphans } from './api/files.ts';

const kb = (n: number) =>
  n < 1024 ? `${n} B` : n < 1024 ** 2 ? `${(n / 1024).toFixed(1)} KB` : `${(n / 1024 ** 2).toFixed(1)} MB`;

/** Upload with a progress bar, optionally onto a row's File field. */
function UploadForm({ appId }: { appId: string }) {
  const [file, setFile] = useState<File | null>(null);
  const [progress, setProgress] = useState<number | null>(null);
  const [target, setTarget] = useState({ className: '', objectId: '', field: '' });
  const [done, setDone] = useState<{ name: string; url: string } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const attach = target.className && target.objectId && target.field;

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!file) return;
    setError(null);
    setDone(null);
    setProgress(0);
    setBusy(true);
    try {
      const uploaded = await uploadFile(appId, file, setProgress);
      if (attach) await attachFile(appId, target.className, target.objectId, target.field, uploaded);
      setDone(uploaded);
      toast.success(attach ? `Uploaded and set on ${target.className} ${target.objectId}.` : 'Uploaded.');
    } catch (err) {
      setError(isApiError(err) ? err.error : String(err));
      setProgress(null);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form
      onSubmit={submit}
      className="space-y-3 rounded-lg border border-slate-200 p-4 dark:border-slate-700"
      aria-label="Upload a file"
    >
      <label className="block text-sm">
        <span className="mb-1 block font-medium">File</span>
        <input
          type="file"
          aria-label="File to upload"
          onChange={(e) => setFile(e.target.files?.[0] ?? null)}
        />
      </label>
      <fieldset className="grid grid-cols-3 gap-2 text-sm">
        <legend className="mb-1 text-slate-500">Set it on a row (optional)</legend>
        <Input
          aria-label="Class"
          placeholder="Class"
          value={target.className}
          onChange={(e) => setTarget({ ...target, className: e.target.value })}
        />
        <Input
          aria-label="Object id"
          placeholder="objectId"
          value={target.objectId}
          onChange={(e) => setTarget({ ...target, objectId: e.target.value })}
        />
        <Input
          aria-label="Field"
          placeholder="File field"
          value={target.field}
          onChange={(e) => setTarget({ ...target, field: e.target.value })}
        />
      </fieldset>
      <div className="flex items-center gap-3">
        <Button type="submit" variant="primary" disabled={!file || busy}>
          Upload
        </Button>
        {progress !== null && (
          <progress
            aria-label="Upload progress"
            value={Math.round(progress * 100)}
            max={100}
            className="h-2 w-64"
            data-testid="upload-progress"
          />
        )}
        {progress !== null && <span className="text-sm tabular-nums">{Math.round(progress * 100)}%</span>}
      </div>
      {done && (
        <p className="text-sm" data-testid="upload-result">
          Stored as <FileValue appId={appId} name={done.name} />
        </p>
      )}
      {error && (
        <p role="alert" className="text-sm text-red-600">
          {error}
        </p>
      )}
    </form>
  );
}

function OrphanReport({ appId, canWrite }: { appId: string; canWrite: boolean }) {
  const orphans = useOrphans(appId);
  const remove = useDeleteFile(appId);
  const [confirm, setConfirm] = useState<StoredFile | null>(null);
  return (
    <QueryState
      query={orphans}
      loading="Looking for files no row references…"
      failed="Could not build the orphan report"
    >
      {(files) => (
        <>
          {files.length === 0 ? (
            <p className="text-sm text-slate-500" data-testid="orphans-empty">
              Every stored file is referenced by a row.
            </p>
          ) : (
            <table className="w-full text-left text-sm">
              <thead className="text-slate-500">
                <tr>
                  <th className="py-1">File</th>
                  <th>Type</th>
                  <th>Size</th>
                  <th>Uploaded</th>
                  <th />
                </tr>
              </thead>
              <tbody>
                {files.map((f) => (
                  <tr
                    key={f.name}
                    data-testid="orphan-row"
                    className="border-t border-slate-100 dark:border-slate-800"
                  >
                    <td className="py-1">
                      <FileValue appId={appId} name={f.name} />
                    </td>
                    <td>{f.contentType}</td>
                    <td className="tabular-nums">{kb(f.size)}</td>
                    <td>
                      <time dateTime={f.createdAt} title={f.createdAt}>
                        {new Date(f.createdAt).toLocaleString()}
                      </time>
                    </td>
                    <td className="text-right">
                      {canWrite && (
                        <Button size="sm" variant="danger" onClick={() => setConfirm(f)}>
                          Delete
                        </Button>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <Dialog
            open={confirm !== null}
            title="Delete this file?"
            onClose={() => setConfirm(null)}
            footer={
              <>
                <Button onClick={() => setConfirm(null)}>Cancel</Button>
                <Button
                  variant="danger"
                  onClick={() => {
                    const f = confirm!;
                    setConfirm(null);
                    remove.mutate(f.name, {
                      onSuccess: () => toast.success('File deleted.'),
                      onError: (err) => toast.error(err),
                    });
                  }}
                >
                  Delete file
                </Button>
              </>
            }
          >
            <p className="text-sm">
              {confirm?.name} is referenced by no row. Deleting it removes its bytes for good.
            </p>
          </Dialog>
        </>
      )}
    </QueryState>
  );
}

/**
 * File values that name no file the service stored (urls or made-up names written before names
 * were checked): listed as plain text, never linked or loaded, with the row and field holding each.
 */
function ForeignReport({ appId }: { appId: string }) {
  const foreign = useForeignFileValues(appId);
  return (
    <QueryState
      query={foreign}
      loading="Looking for File values that name no stored file…"
      failed="Could not build the report of foreign file values"
      isEmpty={(files) => files.length === 0}
      empty={
        <p className="text-sm text-slate-500" data-testid="foreign-empty">
          Every File value names a file stored by this service.
        </p>
      }
    >
      {(files) => (
        <table className="w-full text-left text-sm">
          <thead className="text-slate-500">
            <tr>
              <th className="py-1">Row</th>
              <th>Field</th>
              <th>Name (never opened)</th>
            </tr>
          </thead>
          <tbody>
            {files.map((f) => (
              <tr
                key={`${f.className}/${f.objectId}/${f.field}/${f.name}`}
                data-testid="foreign-row"
                className="border-t border-slate-100 dark:border-slate-800"
              >
                <td className="py-1 font-mono text-xs">
                  {f.className} {f.objectId}
                </td>
                <td>{f.field}</td>
                <td className="break-all">
                  <FileValue appId={appId} name={f.name} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </QueryState>
  );
}

/** /apps/:appId/files: upload (with progress), the files no row references, and foreign file values. */
export default function FilesRoute() {
  const { appId = '' } = useParams();
  const canWrite = useCanWrite();
  return (
    <div className="mx-auto max-w-5xl space-y-6 p-6">
      <div>
        <h1 className="text-xl font-semibold">Files</h1>
        <p className="mt-1 text-sm text-slate-500 dark:text-slate-400">
          Files are stored under a unique name and served at their url. Deleting a row keeps its file: the
          orphan report lists the files no row references.
        </p>
      </div>
      {canWrite && <UploadForm appId={appId} />}
      <section aria-label="Orphan files">
        <h2 className="mb-2 text-base font-semibold">Orphan files</h2>
        <OrphanReport appId={appId} canWrite={canWrite} />
      </section>
      <section aria-label="Foreign file values">
        <h2 className="mb-1 text-base font-semibold">Foreign file values</h2>
        <p className="mb-2 text-sm text-slate-500 dark:text-slate-400">
          File values that name no file this service stored, written before file names were checked. The
          console never opens them: set the field to an uploaded file, or clear it.
        </p>
        <ForeignReport appId={appId} />
      </section>
    </div>
  );
}

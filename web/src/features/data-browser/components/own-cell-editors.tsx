/**
 * The grid's editors of Relation and File cells, and the "Why?" of a cell a viewpoint does not
 * get. A Relation cell adds and removes members with the service's relation operations and a
 * File cell uploads (or replaces) its file: both go through the same edit as every other cell,
 * so "View as" makes them dry runs with that viewpoint's permissions, like any grid write.
 */
import {
  ErrorCode,
  isIssuedFileName,
  OBJECT_ID_PATTERN,
  toUploadName,
  uploadNameOf,
} from '@bds/client/protocol';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { QueryState } from '../../../components/query-state.tsx';
import { errorText, isApiError } from '../../../lib/api.ts';
import { uploadFile } from '../../../lib/file-upload.ts';
import type { Viewpoint } from '../../../lib/security-api.ts';
import type { FieldType, Row } from '../../../lib/wire.ts';
import { dataApi } from '../api/bff.ts';

/** Field types whose grid editor lives here. */
export const hasOwnEditor = (type: FieldType): boolean => type === 'Relation' || type === 'File';

/** How many members the relation editor lists. */
export const MEMBERS_SHOWN = 20;

const box =
  'absolute left-0 top-0 z-30 w-80 space-y-1 rounded border border-blue-500 bg-white p-2 text-xs shadow-lg dark:bg-gray-900';

export interface OwnEditorProps {
  appId: string;
  className: string;
  row: Row;
  field: string;
  type: FieldType;
  targetClass?: string;
  /** "View as": writes are dry runs, and nothing is uploaded. */
  viewpoint: Viewpoint | null;
  /** Sends one change of the field (the grid's edit); true when it was saved. */
  apply(value: unknown): Promise<boolean>;
  /** Sends the change and closes the editor. */
  commit(value: unknown): void;
  onCancel(): void;
}

export function OwnCellEditor(p: OwnEditorProps) {
  return p.type === 'Relation' ? <RelationEditor {...p} /> : <FileEditor {...p} />;
}

function closeOnEscape(e: React.KeyboardEvent, cancel: () => void) {
  if (e.key !== 'Escape') return;
  e.preventDefault();
  e.stopPropagation();
  cancel();
}

function Problem({ text }: { text: string | null }) {
  if (!text) return null;
  return (
    <p role="alert" data-testid="cell-editor-error" className="text-red-600">
      {text}
    </p>
  );
}

function RelationEditor({ appId, className, row, field, targetClass = '', apply, onCancel }: OwnEditorProps) {
  const [id, setId] = useState('');
  const [problem, setProblem] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const qc = useQueryClient();
  const where = {
    $relatedTo: { object: { __type: 'Pointer', className, objectId: row.objectId }, key: field },
  };
  const key = ['data-browser', appId, 'members', className, row.objectId, field];
  const members = useQuery({
    queryKey: key,
    queryFn: ({ signal }) =>
      dataApi.find(
        appId,
        targetClass,
        { where, limit: MEMBERS_SHOWN, order: 'objectId', count: true },
        signal,
      ),
  });
  const change = async (op: 'AddRelation' | 'RemoveRelation', memberId: string) => {
    setBusy(true);
    setProblem(null);
    try {
      const saved = await apply({
        __op: op,
        objects: [{ __type: 'Pointer', className: targetClass, objectId: memberId }],
      });
      if (saved) {
        setId('');
        await qc.invalidateQueries({ queryKey: key });
      }
    } finally {
      setBusy(false);
    }
  };
  const add = async () => {
    const wanted = id.trim();
    if (!OBJECT_ID_PATTERN.test(wanted)) return setProblem(`Type the objectId of a ${targetClass} row.`);
    try {
      await dataApi.get(appId, targetClass, wanted);
    } catch (err) {
      return setProblem(
        isApiError(err) && err.code === ErrorCode.OBJECT_NOT_FOUND
          ? `No ${targetClass} row ${wanted}.`
          : errorText(err),
      );
    }
    await change('AddRelation', wanted);
  };
  const total = members.data?.count ?? members.data?.results.length ?? 0;
  return (
    // biome-ignore lint/a11y/noStaticElementInteractions: Escape closes the editor
    <div
      className={box}
      data-testid="relation-editor"
      onKeyDown={(e) => closeOnEscape(e, onCancel)}
      onDoubleClick={(e) => e.stopPropagation()}
    >
      <div className="flex items-center">
        <span className="font-medium">
          {field} → {targetClass}
        </span>
        <button type="button" className="ml-auto" aria-label={`close ${field}`} onClick={onCancel}>
          ✕
        </button>
      </div>
      <QueryState
        query={members}
        loading="Loading members…"
        errorText={errorText}
        inline
        isEmpty={(d) => d.results.length === 0}
        empty={
          <p className="text-gray-500" data-testid="relation-empty">
            No members.
          </p>
        }
      >
        {({ results }) => (
          <ul aria-label={`members of ${field}`} className="max-h-40 overflow-auto">
            {results.map((m) => (
              <li key={m.objectId} className="flex items-center gap-2" data-testid="relation-member">
                <span className="font-mono">{m.objectId}</span>
                <button
                  type="button"
                  className="ml-auto rounded border px-1"
                  disabled={busy}
                  aria-label={`remove ${m.objectId} from ${field}`}
                  onClick={() => void change('RemoveRelation', m.objectId)}
                >
                  Remove
                </button>
              </li>
            ))}
            {total > results.length && (
              <li className="text-gray-500">
                and {total - results.length} more (open “View {targetClass}”)
              </li>
            )}
          </ul>
        )}
      </QueryState>
      <form
        className="flex items-center gap-1"
        onSubmit={(e) => {
          e.preventDefault();
          void add();
        }}
      >
        <input
          // biome-ignore lint/a11y/noAutofocus: the editor opens to type an id
          autoFocus
          aria-label={`add to ${field}`}
          placeholder={`${targetClass} objectId`}
          className="min-w-0 flex-1 rounded border px-1 font-mono dark:bg-gray-800"
          value={id}
          onChange={(e) => setId(e.target.value)}
        />
        <button type="submit" className="rounded border px-2" disabled={busy}>
          Add
        </button>
      </form>
      <Problem text={problem} />
    </div>
  );
}

function FileEditor({ appId, row, field, viewpoint, commit, onCancel }: OwnEditorProps) {
  const [progress, setProgress] = useState<number | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const current = (row[field] as { name?: unknown } | undefined)?.name;
  const upload = async (file: File) => {
    setProblem(null);
    setProgress(0);
    try {
      const stored = await uploadFile(appId, file, setProgress);
      // The value names the file by the name the service issued, as every File value must.
      if (!isIssuedFileName(stored.name)) throw new Error(`The service answered the name ${stored.name}.`);
      commit({ __type: 'File', name: stored.name });
    } catch (err) {
      setProgress(null);
      setProblem(`Upload of ${toUploadName(file.name)} refused: ${errorText(err)}`);
    }
  };
  return (
    // biome-ignore lint/a11y/noStaticElementInteractions: Escape closes the editor
    <div
      className={box}
      data-testid="file-editor"
      onKeyDown={(e) => closeOnEscape(e, onCancel)}
      onDoubleClick={(e) => e.stopPropagation()}
    >
      <div className="flex items-center">
        <span className="font-medium">
          {field}
          {isIssuedFileName(current) ? `: ${uploadNameOf(current)}` : ''}
        </span>
        <button type="button" className="ml-auto" aria-label={`close ${field}`} onClick={onCancel}>
          ✕
        </button>
      </div>
      {viewpoint ? (
        <p data-testid="file-editor-viewas">
          Viewing as someone else: an upload would be made with the master key, so none is offered here. Go
          back to master to upload.
        </p>
      ) : (
        <>
          <input
            type="file"
            aria-label={`${isIssuedFileName(current) ? 'replace' : 'upload'} the file of ${field}`}
            className="w-full"
            disabled={progress !== null}
            onChange={(e) => {
              const file = e.target.files?.[0];
              if (file) void upload(file);
            }}
          />
          {progress !== null && (
            <progress
              className="w-full"
              max={100}
              value={Math.round(progress * 100)}
              aria-label="upload progress"
            />
          )}
        </>
      )}
      <Problem text={problem} />
    </div>
  );
}

/** A cell the viewpoint's row does not hold (hidden by protectedFields, stripped, or unset), with its "Why?". */
export function NotShownCell({ objectId, field, onWhy }: { objectId: string; field: string; onWhy(): void }) {
  return (
    <span className="text-gray-400" data-testid="not-shown">
      <span className="italic">not shown</span>{' '}
      <button
        type="button"
        className="text-xs text-blue-700 underline dark:text-blue-300"
        aria-label={`why ${field} of ${objectId}`}
        onClick={(e) => {
          e.stopPropagation();
          onWhy();
        }}
      >
        Why?
      </button>
    </span>
  );
}

/**
 * Opens a Relation or File cell's editor: those cells hold a link (the members, the file), so a
 * double click would follow it.
 */
export function EditCellButton({
  objectId,
  field,
  onEdit,
}: {
  objectId: string;
  field: string;
  onEdit(): void;
}) {
  return (
    <button
      type="button"
      className="ml-auto shrink-0 rounded px-1 text-xs text-gray-500 hover:bg-gray-200 dark:hover:bg-gray-700"
      aria-label={`edit ${field} of ${objectId}`}
      title={`Edit ${field}`}
      onClick={(e) => {
        e.stopPropagation();
        onEdit();
      }}
    >
      ✎
    </button>
  );
}

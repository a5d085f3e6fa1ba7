/**
 * Row detail panel: every field (editable, as in the grid), the raw JSON, the ACL and the rows
 * that point to this one; its History tab lists the row's versions (revert, restore). Escape
 * closes it.
 */
import { ErrorCode } from '@bds/client/protocol';
import { useQuery } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import { Link } from 'react-router';
import { Tabs } from '../../../components/ui/tabs.tsx';
import { errorText, isApiError } from '../../../lib/api.ts';
import type { Viewpoint } from '../../../lib/security-api.ts';
import { useShortcut } from '../../../lib/shortcuts.ts';
import {
  columnsOf,
  isEditableField,
  isPlainObject,
  type Row,
  type SchemaDoc,
  typeOf,
} from '../../../lib/wire.ts';
import { useAclNames } from '../api/acl-names.ts';
import { dataApi } from '../api/bff.ts';
import { dataBrowserKeys } from '../api/query-keys.ts';
import { viewAsApi } from '../api/viewas.ts';
import { aclWords, principalOf, rowAcl } from '../lib/acl.ts';
import { CellValue, dataPath } from './cell.tsx';
import { CellEditor } from './cell-editor.tsx';
import { RowHistory } from './row-history.tsx';
import type { WhyQuestion } from './why-panel.tsx';

export function RowDetail({
  appId,
  className,
  objectId,
  schema,
  schemas,
  canWrite,
  viewpoint = null,
  onEdit,
  onClose,
  onEditAcl,
  onWhy,
  onGone,
  tab = 'fields',
  onTab,
  onHistoryChanged,
}: {
  appId: string;
  className: string;
  objectId: string;
  schema: SchemaDoc;
  schemas: SchemaDoc[];
  canWrite: boolean;
  /** "View as": the row as this viewpoint gets it (edits are the caller's dry runs). */
  viewpoint?: Viewpoint | null;
  onEdit(row: Row, field: string, value: unknown): Promise<boolean>;
  onClose(): void;
  /** Opens the ACL editor; absent for read-only console users and while viewing as someone. */
  onEditAcl?(row: Row): void;
  onWhy?(q: WhyQuestion): void;
  /** The row, read before, is not found any more (deleted elsewhere). */
  onGone?(): void;
  /** What the panel shows: the row's fields, or its history (as master only). */
  tab?: RowTab;
  onTab?(tab: RowTab): void;
  /** A revert or a restore from the History tab changed the row. */
  onHistoryChanged?(): void;
}) {
  const [editing, setEditing] = useState<string | null>(null);
  useShortcut('Escape', 'Close the row panel', onClose, 'Data browser');
  const q = useQuery({
    queryKey: [...dataBrowserKeys.row(appId, className, objectId), viewpoint],
    queryFn: ({ signal }) =>
      viewpoint
        ? viewAsApi.get(appId, className, viewpoint, objectId)
        : dataApi.get(appId, className, objectId, signal),
    retry: viewpoint ? false : 3,
  });
  // Read before and now not found: deleted. Its fields and edit links go; the route closes the panel.
  const gone =
    !viewpoint && isApiError(q.error) && q.error.code === ErrorCode.OBJECT_NOT_FOUND && q.data !== undefined;
  const goneRef = useRef(onGone);
  goneRef.current = onGone;
  useEffect(() => {
    if (gone) goneRef.current?.();
  }, [gone]);
  const row = gone ? undefined : q.data;
  const history = tab === 'history' && !viewpoint;
  // On the History tab a deleted row is expected: its history says so (and offers Restore).
  const missing = isApiError(q.error) && q.error.code === ErrorCode.OBJECT_NOT_FOUND;
  const why = (operation: WhyQuestion['operation'], field?: string) =>
    onWhy?.({ operation, objectId, field, viewpoint });
  const pointer = { __type: 'Pointer', className, objectId };
  const inbound = schemas.flatMap((s) =>
    Object.entries(s.fields)
      .filter(([, f]) => (f.type === 'Pointer' || f.type === 'Relation') && f.targetClass === className)
      .map(([field, f]) => ({ cls: s.className, field, type: f.type })),
  );
  return (
    <aside className="w-80 shrink-0 overflow-auto border-l p-2 text-sm xl:w-96" data-testid="row-detail">
      <div className="flex items-center">
        <h2 className="font-semibold">
          {className} {objectId}
        </h2>
        <button type="button" className="ml-auto" aria-label="close row detail" onClick={onClose}>
          ✕
        </button>
      </div>
      <div className="mt-1 flex flex-wrap gap-2">
        {onWhy && (
          <button type="button" className="rounded border px-2 py-0.5 text-xs" onClick={() => why('get')}>
            Why? (this row)
          </button>
        )}
        {onEditAcl && row && (
          <button type="button" className="rounded border px-2 py-0.5 text-xs" onClick={() => onEditAcl(row)}>
            Edit ACL
          </button>
        )}
      </div>
      {!viewpoint && onTab && (
        <div className="mt-2">
          <Tabs
            tabs={[
              { id: 'fields', label: 'Fields' },
              { id: 'history', label: 'History' },
            ]}
            current={history ? 'history' : 'fields'}
            onSelect={onTab}
          />
        </div>
      )}
      {history && (
        <RowHistory
          appId={appId}
          className={className}
          objectId={objectId}
          canWrite={canWrite}
          current={row}
          onChanged={() => {
            onHistoryChanged?.();
            void q.refetch();
          }}
        />
      )}
      {!history && q.isPending && <p>Loading…</p>}
      {q.error && !(history && missing) && (
        <p className="text-red-600" data-testid="row-error">
          {errorText(q.error)}
          {viewpoint && ' — this viewpoint cannot read this row.'}
        </p>
      )}
      {row && !history && (
        <>
          <dl className="mt-2 grid grid-cols-[auto_1fr] gap-x-2 gap-y-1">
            {[...new Set([...columnsOf(schema), ...Object.keys(row)])].map((f) => {
              const type = typeOf(schema, f);
              // Viewing as someone: a column of the class missing from their row is hidden (or unset).
              if (viewpoint && !(f in row))
                return (
                  <div key={f} className="contents" data-detail-field={f} data-hidden="">
                    <dt className="text-gray-500">{f}</dt>
                    <dd className="text-gray-500">
                      not in this viewpoint's row{' '}
                      {onWhy && (
                        <button
                          type="button"
                          className="text-xs text-blue-700 underline dark:text-blue-300"
                          aria-label={`why ${f}`}
                          onClick={() => why('get', f)}
                        >
                          why?
                        </button>
                      )}
                    </dd>
                  </div>
                );
              const editable = canWrite && isEditableField(className, f, type);
              return (
                <div key={f} className="contents" data-detail-field={f}>
                  <dt className="text-gray-500">{f}</dt>
                  <dd className="flex min-w-0 items-start gap-1 break-all">
                    {editing === f ? (
                      <div className="min-w-0 flex-1">
                        <CellEditor
                          inline
                          appId={appId}
                          type={type}
                          targetClass={schema.fields[f]?.targetClass}
                          value={row[f]}
                          onCancel={() => setEditing(null)}
                          onCommit={async (v) => {
                            setEditing(null);
                            if (await onEdit(row as Row, f, v)) void q.refetch();
                          }}
                        />
                      </div>
                    ) : (
                      <>
                        <span className="min-w-0 flex-1">
                          <CellValue
                            appId={appId}
                            className={className}
                            objectId={objectId}
                            field={f}
                            type={type}
                            spec={schema.fields[f]}
                            value={row[f]}
                          />
                        </span>
                        {editable && (
                          <button
                            type="button"
                            className="shrink-0 text-xs text-blue-700 hover:underline dark:text-blue-300"
                            aria-label={`edit ${f}`}
                            onClick={() => setEditing(f)}
                          >
                            edit
                          </button>
                        )}
                      </>
                    )}
                  </dd>
                </div>
              );
            })}
          </dl>
          <h3 className="mt-3 font-semibold">ACL</h3>
          {!viewpoint && <AclSummary appId={appId} value={row.ACL} />}
          {isPlainObject(row.ACL) ? (
            <table className="text-xs">
              <tbody>
                {Object.entries(row.ACL).map(([who, perm]) => (
                  <tr key={who}>
                    <td className="pr-2">{who === '*' ? 'Public' : who}</td>
                    <td>{isPlainObject(perm) && perm.read ? 'read' : ''}</td>
                    <td>{isPlainObject(perm) && perm.write ? 'write' : ''}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : (
            <p className="text-xs text-gray-500">No ACL (public read and write)</p>
          )}
          <h3 className="mt-3 font-semibold">Pointing here</h3>
          {inbound.length === 0 && (
            <p className="text-xs text-gray-500">No class has a pointer or relation to {className}.</p>
          )}
          <ul>
            {inbound.map((i) => (
              <li key={`${i.cls}.${i.field}`}>
                <Link
                  className="text-blue-600 underline dark:text-blue-400"
                  to={dataPath(appId, i.cls, { where: JSON.stringify({ [i.field]: pointer }) })}
                >
                  {i.cls}.{i.field}
                </Link>{' '}
                <span className="text-xs text-gray-500">({i.type})</span>
              </li>
            ))}
          </ul>
          <h3 className="mt-3 font-semibold">Raw JSON</h3>
          <pre
            className="overflow-auto rounded bg-gray-100 p-1 text-xs dark:bg-gray-800"
            data-testid="row-json"
          >
            {JSON.stringify(row, null, 2)}
          </pre>
        </>
      )}
    </aside>
  );
}

export type RowTab = 'fields' | 'history';

/** The row's ACL in words, role inheritance included. */
function AclSummary({ appId, value }: { appId: string; value: unknown }) {
  const acl = rowAcl(value);
  const keys = Object.keys(acl);
  const names = useAclNames(
    appId,
    keys.filter((k) => principalOf(k).kind === 'user'),
    keys.filter((k) => k.startsWith('role:')).map((k) => k.slice(5)),
  );
  const words = aclWords(acl, names.data ?? { users: {}, inheritors: {} });
  return (
    <p
      className={`text-xs ${words.masterOnly ? 'font-bold text-red-700' : 'text-gray-600'}`}
      data-testid="row-acl-words"
    >
      {words.masterOnly ? 'Master key only. ' : ''}
      {words.masterOnly ? '' : `${words.read} ${words.write}`}
    </p>
  );
}

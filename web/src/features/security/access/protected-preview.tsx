import { isObject } from '@bds/client/protocol';
import { useState } from 'react';
import { Spinner } from '../../../components/ui/spinner.tsx';
import { type UserHit, UserPicker } from '../../../components/user-picker.tsx';
import { errorText } from '../../../lib/api.ts';
import { type ExplainRequest, rowsPath, useEvaluate, useExplain } from '../../../lib/security-api.ts';
import { fieldVerdict } from './clp.ts';

const show = (v: unknown) => {
  const text = typeof v === 'string' ? v : JSON.stringify(v);
  return text.length > 60 ? `${text.slice(0, 59)}…` : text;
};

/**
 * "What user U sees of this class": the service's explanation (which protectedFields groups apply
 * and what their intersection hides) next to a real row read as that user. Reflects the saved
 * settings; a draft's effect is in the impact preview.
 */
export function ProtectedPreview({
  appId,
  className,
  fields,
}: {
  appId: string;
  className: string;
  fields: string[];
}) {
  const [user, setUser] = useState<UserHit | null>(null);
  const viewpoint = user ? ({ kind: 'user', userId: user.objectId } as const) : null;
  const sample = useEvaluate(
    appId,
    viewpoint
      ? { viewpoint, method: 'GET', path: rowsPath(className), query: { limit: 1, order: '-createdAt' } }
      : null,
  );
  const body = sample.data?.body;
  const row =
    sample.data?.status === 200 && isObject(body) && Array.isArray(body.results) && isObject(body.results[0])
      ? (body.results[0] as Record<string, unknown>)
      : undefined;
  const explainReq: ExplainRequest | null =
    viewpoint && sample.isSuccess
      ? row && typeof row.objectId === 'string'
        ? { operation: 'get', className, objectId: row.objectId, viewpoint }
        : { operation: 'find', className, viewpoint }
      : null;
  const explain = useExplain(appId, explainReq);
  const layer = explain.data?.layers.find((l) => l.layer === 'protectedFields');
  const hidden = layer?.hidden ?? [];
  const groups = layer?.groups ?? [];

  return (
    <div className="space-y-3 text-sm" data-testid="pf-preview">
      <div className="flex items-center gap-3">
        <UserPicker appId={appId} label="Preview as user" testId="pf-preview-user" onPick={setUser} />
        {user && (
          <span data-testid="pf-preview-who">
            Viewing as <strong>{user.username ?? user.objectId}</strong>
          </span>
        )}
      </div>
      {!user ? (
        <p className="text-slate-500">Choose a user to see which fields of {className} they get.</p>
      ) : sample.isPending || (explainReq && explain.isPending) ? (
        <Spinner label="Asking the service…" />
      ) : sample.isError ? (
        <p role="alert" className="text-red-600">
          Could not read as this user: {errorText(sample.error)}
        </p>
      ) : explain.isError ? (
        <p role="alert" className="text-red-600">
          Could not explain: {errorText(explain.error)}
        </p>
      ) : explain.data && !explain.data.allowed ? (
        <p role="alert" data-testid="pf-preview-refused">
          {user.username ?? user.objectId} may not read {className}:{' '}
          {explain.data.message ?? explain.data.decidedBy}
          {explain.data.code !== undefined ? ` (code ${explain.data.code})` : ''}.
        </p>
      ) : (
        <>
          <p data-testid="pf-preview-groups">
            {groups.length === 0
              ? 'No protectedFields group applies to this user.'
              : `Groups that apply: ${groups.map((g) => `${g.pattern} [${g.fields.join(', ')}]`).join('; ')}. Hidden: ${hidden.length ? hidden.join(', ') : 'nothing'} (the intersection).`}
          </p>
          {!row && <p className="text-slate-500">This user can read no row of {className} right now.</p>}
          <table className="text-sm" data-testid="pf-preview-table">
            <thead>
              <tr className="border-b border-slate-200 text-left dark:border-slate-700">
                <th className="px-2 py-1">Field</th>
                <th className="px-2 py-1">Sees it</th>
                <th className="px-2 py-1">Why</th>
                {row && <th className="px-2 py-1">Sample row ({String(row.objectId)})</th>}
              </tr>
            </thead>
            <tbody>
              {fields.map((f) => {
                const isHidden = hidden.includes(f);
                return (
                  <tr
                    key={f}
                    data-field={f}
                    data-visible={!isHidden}
                    className="border-b border-slate-100 dark:border-slate-800"
                  >
                    <td className="px-2 py-1 font-mono">{f}</td>
                    <td className={`px-2 py-1 ${isHidden ? 'text-red-700' : 'text-emerald-700'}`}>
                      {isHidden ? 'hidden' : 'visible'}
                    </td>
                    <td className="px-2 py-1 text-xs">{fieldVerdict(f, hidden, groups)}</td>
                    {row && (
                      <td className="px-2 py-1 font-mono text-xs" data-sample-present={f in row}>
                        {f in row ? show(row[f]) : '(not returned)'}
                      </td>
                    )}
                  </tr>
                );
              })}
            </tbody>
          </table>
        </>
      )}
    </div>
  );
}

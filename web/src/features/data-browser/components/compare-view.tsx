/**
 * Side by side: the same rows of a class as two viewpoints get them, with the differences marked
 * (rows only one side reads, fields only one side gets). Each refused row has its "Why?".
 */

import { useQuery } from '@tanstack/react-query';
import { errorText } from '../../../lib/api.ts';
import type { Where } from '../../../lib/filter.ts';
import type { Viewpoint } from '../../../lib/security-api.ts';
import { displayText, type Row, type SchemaDoc, typeOf } from '../../../lib/wire.ts';
import { dataApi } from '../api/bff.ts';
import { viewAsApi } from '../api/viewas.ts';
import { differs, diffResults, type RowDiff } from '../lib/viewpoint.ts';
import { useViewpointName, ViewpointPicker } from './viewpoint-picker.tsx';
import type { WhyQuestion } from './why-panel.tsx';

/** Rows compared: the first ones by objectId. */
export const COMPARE_ROWS = 100;

function useSide(appId: string, cls: string, where: Where, vp: Viewpoint | null) {
  return useQuery({
    queryKey: ['data-browser', appId, 'compare', cls, where, vp],
    queryFn: async () => {
      const p = { where, order: 'objectId', limit: COMPARE_ROWS };
      return (vp ? await viewAsApi.find(appId, cls, vp, p) : await dataApi.find(appId, cls, p)).results;
    },
    retry: false,
  });
}

function Side({
  side,
  label,
  diffs,
  rows,
  error,
  columns,
  schema,
  onWhy,
}: {
  side: 'left' | 'right';
  label: string;
  diffs: RowDiff[];
  rows: Row[] | undefined;
  error: unknown;
  columns: string[];
  schema: SchemaDoc;
  onWhy(objectId: string): void;
}) {
  const byId = new Map((rows ?? []).map((r) => [r.objectId, r]));
  return (
    <div className="min-w-0 overflow-auto border" data-testid={`compare-${side}`}>
      <p className="sticky top-0 border-b bg-gray-100 px-2 py-1 font-semibold dark:bg-gray-800">As {label}</p>
      {error ? (
        <p className="p-2 text-red-600" role="alert">
          {errorText(error)}
        </p>
      ) : !rows ? (
        <p className="p-2">Loading…</p>
      ) : (
        <table className="w-full text-xs">
          <thead>
            <tr className="border-b">
              {columns.map((c) => (
                <th key={c} className="px-1 text-left">
                  {c}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {diffs.map((d) => {
              const row = byId.get(d.objectId);
              const mine = side === 'left' ? d.onlyLeft : d.onlyRight;
              const theirs = side === 'left' ? d.onlyRight : d.onlyLeft;
              if (!row)
                return (
                  <tr
                    key={d.objectId}
                    data-row-id={d.objectId}
                    data-diff="missing"
                    className="border-b bg-red-50 dark:bg-red-950"
                  >
                    <td className="px-1 font-mono">{d.objectId}</td>
                    <td
                      colSpan={Math.max(1, columns.length - 1)}
                      className="px-1 text-red-700 dark:text-red-300"
                    >
                      not readable as {label}{' '}
                      <button type="button" className="underline" onClick={() => onWhy(d.objectId)}>
                        Why?
                      </button>
                    </td>
                  </tr>
                );
              return (
                <tr
                  key={d.objectId}
                  data-row-id={d.objectId}
                  data-diff={differs(d) ? (mine.length || theirs.length ? 'fields' : 'extra') : undefined}
                  className={`border-b ${differs(d) ? 'bg-amber-50 dark:bg-amber-950' : ''}`}
                >
                  {columns.map((c) => {
                    const hiddenHere = theirs.includes(c);
                    const onlyHere = mine.includes(c);
                    return (
                      <td
                        key={c}
                        data-field={c}
                        data-diff={hiddenHere ? 'hidden' : onlyHere ? 'only-here' : undefined}
                        className={`max-w-40 truncate px-1 ${hiddenHere ? 'bg-red-100 text-red-700 dark:bg-red-900' : onlyHere ? 'bg-emerald-100 dark:bg-emerald-900' : ''}`}
                      >
                        {hiddenHere ? 'hidden' : displayText(typeOf(schema, c), row[c])}
                      </td>
                    );
                  })}
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </div>
  );
}

export function CompareView({
  appId,
  schema,
  columns,
  where,
  left,
  right,
  onChange,
  onWhy,
}: {
  appId: string;
  schema: SchemaDoc;
  columns: string[];
  where: Where;
  left: Viewpoint | null;
  right: Viewpoint | null;
  onChange(left: Viewpoint | null, right: Viewpoint | null): void;
  onWhy(q: WhyQuestion): void;
}) {
  const cls = schema.className;
  const a = useSide(appId, cls, where, left);
  const b = useSide(appId, cls, where, right);
  const leftName = useViewpointName(appId, left);
  const rightName = useViewpointName(appId, right);
  const diffs = diffResults(a.data ?? [], b.data ?? []);
  const changed = a.data && b.data ? diffs.filter(differs).length : null;
  return (
    <div className="flex min-h-0 flex-1 flex-col gap-2 p-2 text-sm" data-testid="compare">
      <div className="flex flex-wrap items-center gap-3">
        <span className="flex items-center gap-1">
          Left
          <ViewpointPicker
            appId={appId}
            label="left viewpoint"
            value={left}
            onChange={(vp) => onChange(vp, right)}
          />
        </span>
        <span className="flex items-center gap-1">
          Right
          <ViewpointPicker
            appId={appId}
            label="right viewpoint"
            value={right}
            onChange={(vp) => onChange(left, vp)}
          />
        </span>
        <span data-testid="compare-summary" data-differences={changed ?? ''}>
          {changed === null
            ? 'Comparing…'
            : `${changed} of ${diffs.length} rows differ (the first ${COMPARE_ROWS} rows by objectId of each side).`}
        </span>
      </div>
      <div className="grid min-h-0 flex-1 grid-cols-2 gap-2">
        <Side
          side="left"
          label={leftName}
          diffs={diffs}
          rows={a.data}
          error={a.error}
          columns={columns}
          schema={schema}
          onWhy={(objectId) => onWhy({ operation: 'get', objectId, viewpoint: left })}
        />
        <Side
          side="right"
          label={rightName}
          diffs={diffs}
          rows={b.data}
          error={b.error}
          columns={columns}
          schema={schema}
          onWhy={(objectId) => onWhy({ operation: 'get', objectId, viewpoint: right })}
        />
      </div>
    </div>
  );
}

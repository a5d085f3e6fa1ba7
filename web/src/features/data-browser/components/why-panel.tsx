/**
 * "Why?": the service's layer-by-layer explanation (CLP, ACL, protectedFields) of one operation
 * for one viewpoint, in plain words, with what would have to change for it to be allowed.
 */

import { useState } from 'react';
import { QueryState } from '../../../components/query-state.tsx';
import { Dialog } from '../../../components/ui/dialog.tsx';
import { errorText } from '../../../lib/api.ts';
import {
  type ExplainLayer,
  type ExplainRequest,
  type Operation,
  useExplain,
  type Viewpoint,
} from '../../../lib/security-api.ts';
import { ViewpointPicker } from './viewpoint-picker.tsx';

const OPERATIONS: Operation[] = ['find', 'get', 'count', 'create', 'update', 'delete', 'addField'];
/** Operations on one row: they take the row's objectId. */
const ROW_OPERATIONS = new Set<Operation>(['get', 'update', 'delete']);

const LAYER_NAMES: Record<ExplainLayer['layer'], string> = {
  clp: 'Class-level permissions (CLP)',
  acl: 'Row ACL',
  protectedFields: 'Protected fields',
};

export interface WhyQuestion {
  operation: Operation;
  objectId?: string;
  /** A field the question is about (a cell): its line in the protectedFields layer is marked. */
  field?: string;
  body?: Record<string, unknown>;
  viewpoint: Viewpoint | null;
}

function LayerItem({ layer, field }: { layer: ExplainLayer; field?: string }) {
  const verdict = layer.skipped
    ? 'not reached'
    : layer.layer === 'protectedFields'
      ? layer.hidden?.length
        ? `hides ${layer.hidden.join(', ')}`
        : 'hides nothing'
      : layer.allowed
        ? 'allows'
        : 'refuses';
  const tone = layer.skipped
    ? 'text-gray-500'
    : layer.allowed === false
      ? 'text-red-700 dark:text-red-400'
      : 'text-emerald-700 dark:text-emerald-400';
  const fieldHidden = field && layer.layer === 'protectedFields' && layer.hidden?.includes(field);
  return (
    <li
      className="rounded border p-2"
      data-testid={`why-layer-${layer.layer}`}
      data-verdict={layer.skipped ? 'skipped' : layer.allowed === false ? 'refused' : 'allowed'}
    >
      <div className="flex flex-wrap items-baseline gap-2">
        <span className="font-medium">{LAYER_NAMES[layer.layer]}</span>
        <span className={`font-semibold ${tone}`}>{verdict}</span>
        {layer.entry && <code className="text-xs">{layer.entry}</code>}
      </div>
      <p>{layer.reason}</p>
      {layer.roleChain && layer.roleChain.length > 1 && (
        <p className="text-xs text-gray-600 dark:text-gray-400">
          Through the role chain {layer.roleChain.join(' → ')}.
        </p>
      )}
      {layer.groups && layer.groups.length > 0 && (
        <ul className="mt-1 text-xs">
          {layer.groups.map((g) => (
            <li key={g.pattern}>
              <code>{g.pattern}</code> protects {g.fields.length ? g.fields.join(', ') : 'nothing'}
            </li>
          ))}
        </ul>
      )}
      {fieldHidden && (
        <p className="font-medium text-red-700" data-testid="why-field-hidden">
          {field} is hidden from this viewpoint by these groups.
        </p>
      )}
    </li>
  );
}

/** The explanation of one question (the viewpoint must be set). */
export function Explanation({ appId, className, q }: { appId: string; className: string; q: WhyQuestion }) {
  const req: ExplainRequest | null = q.viewpoint
    ? {
        operation: q.operation,
        className,
        viewpoint: q.viewpoint,
        ...(q.objectId && ROW_OPERATIONS.has(q.operation) ? { objectId: q.objectId } : {}),
        ...(q.body ? { body: q.body } : {}),
      }
    : null;
  const ex = useExplain(appId, req);
  if (!req) return <p className="text-gray-600">The master key bypasses every layer: it may do anything.</p>;
  return (
    <QueryState query={ex} loading="Asking the service…" errorText={errorText} errorTestId="why-error" inline>
      {(e) => (
        <div
          className="space-y-2 text-sm"
          data-testid="why-result"
          data-decided-by={e.decidedBy}
          data-allowed={e.allowed}
        >
          <p
            className={`font-semibold ${e.allowed ? 'text-emerald-700 dark:text-emerald-400' : 'text-red-700 dark:text-red-400'}`}
            data-testid="why-verdict"
          >
            {e.allowed
              ? `Allowed: ${q.operation} on ${className}${req.objectId ? ` ${req.objectId}` : ''}.`
              : `Refused by the ${e.decidedBy === 'clp' ? 'class-level permissions (CLP)' : e.decidedBy === 'acl' ? 'row ACL' : e.decidedBy}: ${q.operation} on ${className}${req.objectId ? ` ${req.objectId}` : ''}${e.code !== undefined ? ` would answer ${e.code} ${e.message ?? ''}` : ''}`}
          </p>
          {e.viewpoint.roles.length > 0 && (
            <p className="text-xs text-gray-600 dark:text-gray-400">
              Holds the roles{' '}
              {e.viewpoint.roles
                .map((r) => (r.chain.length > 1 ? `${r.name} (through ${r.chain.join(' → ')})` : r.name))
                .join(', ')}
              .
            </p>
          )}
          <ol className="space-y-1">
            {e.layers.map((l) => (
              <LayerItem key={l.layer} layer={l} field={q.field} />
            ))}
          </ol>
          {e.toAllow.length > 0 && (
            <div data-testid="why-to-allow">
              <p className="font-medium">What would have to change to allow it:</p>
              <ul className="list-disc pl-5">
                {e.toAllow.map((t) => (
                  <li key={t}>{t}</li>
                ))}
              </ul>
            </div>
          )}
        </div>
      )}
    </QueryState>
  );
}

/** The "Why?" dialog: the question can be changed (operation, row, viewpoint) and asked again. */
export function WhyDialog({
  appId,
  className,
  initial,
  onClose,
}: {
  appId: string;
  className: string;
  initial: WhyQuestion;
  onClose(): void;
}) {
  const [q, setQ] = useState<WhyQuestion>(initial);
  return (
    <Dialog open title={`Why? — ${className}`} onClose={onClose} wide>
      <div className="mb-3 flex flex-wrap items-center gap-2 text-sm">
        <label className="flex items-center gap-1">
          Operation
          <select
            aria-label="why operation"
            className="rounded border px-1 dark:bg-gray-800"
            value={q.operation}
            onChange={(e) => setQ({ ...q, operation: e.target.value as Operation, body: undefined })}
          >
            {OPERATIONS.map((o) => (
              <option key={o}>{o}</option>
            ))}
          </select>
        </label>
        {ROW_OPERATIONS.has(q.operation) && (
          <label className="flex items-center gap-1">
            Row
            <input
              aria-label="why objectId"
              className="w-32 rounded border px-1 dark:bg-gray-800"
              value={q.objectId ?? ''}
              onChange={(e) => setQ({ ...q, objectId: e.target.value.trim() || undefined })}
            />
          </label>
        )}
        <span className="flex items-center gap-1">
          As
          <ViewpointPicker
            appId={appId}
            label="why viewpoint"
            value={q.viewpoint}
            allowMaster={false}
            onChange={(viewpoint) => setQ({ ...q, viewpoint })}
          />
        </span>
      </div>
      {q.viewpoint ? (
        <Explanation appId={appId} className={className} q={q} />
      ) : (
        <p className="text-gray-600">Choose whose permissions to explain.</p>
      )}
    </Dialog>
  );
}

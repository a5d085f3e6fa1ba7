import { useQuery } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import { useSearchParams } from 'react-router';
import { ImpactPreview } from '../../../components/impact-preview.tsx';
import { JsonDiff } from '../../../components/json-diff.tsx';
import { QueryState } from '../../../components/query-state.tsx';
import { Button } from '../../../components/ui/button.tsx';
import { Select } from '../../../components/ui/input.tsx';
import { errorText } from '../../../lib/api.ts';
import { fetchSchemas } from '../../../lib/schemas-api.ts';
import {
  type OperationRule,
  securityKeys,
  useClassRules,
  useSaveClp,
  useUserNames,
} from '../../../lib/security-api.ts';
import { useCanWrite } from '../../../lib/session.ts';
import { toast } from '../../../lib/toast.ts';
import type { SchemaDoc } from '../../../lib/wire.ts';
import {
  CLP_OPERATIONS,
  type Clp,
  type ClpOperation,
  completeClp,
  dangerousSettings,
  describeClpChanges,
  principalsOf,
  protectedFieldsOf,
  ruleWords,
  setProtectedFields,
} from './clp.ts';
import { ClpMatrix } from './clp-matrix.tsx';
import { ProtectedFieldsEditor } from './protected-fields-editor.tsx';
import { ProtectedPreview } from './protected-preview.tsx';

/** Fields every row has that protectedFields does not apply to. */
const UNPROTECTABLE = new Set(['objectId', 'createdAt', 'updatedAt', 'ACL']);

/**
 * The rules the service enforces on a class beside its CLP (a built-in class's own rules), per
 * operation, as the service answers them: fixed ones decide alone, the others apply with the CLP.
 */
function ServiceRules({ rules }: { rules: OperationRule[] }) {
  const builtIn = rules.filter((r) => r.builtIn);
  if (builtIn.length === 0) return null;
  return (
    <section aria-label="Rules the service enforces" data-testid="class-rules" className="text-sm">
      <h2 className="mb-1 font-semibold">Rules the service enforces</h2>
      <p className="mb-1 text-xs text-slate-500 dark:text-slate-400">
        This is a built-in class: the service applies its own rules to these operations. Fixed ones ignore the
        class-level permissions; the others apply together with them.
      </p>
      <ul className="space-y-1">
        {builtIn.map((r) => (
          <li key={r.operation} data-operation={r.operation} data-fixed={r.fixed}>
            <code className="font-mono">{r.operation}</code>:{' '}
            {r.fixed ? 'fixed' : 'with the class-level permissions'}
            {' — '}
            {r.builtIn!.reason}. Now: {ruleWords(r)}.
          </li>
        ))}
      </ul>
    </section>
  );
}

/** The CLP and protectedFields editors of one class, with review (diff, warnings, impact) before saving. */
function ClassAccessEditor({ appId, doc, canWrite }: { appId: string; doc: SchemaDoc; canWrite: boolean }) {
  const saved: Clp = doc.classLevelPermissions ?? {};
  const rules = useClassRules(appId, doc.className);
  const fixed: Partial<Record<ClpOperation, OperationRule>> = Object.fromEntries(
    (rules.data?.operations ?? []).filter((r) => r.fixed).map((r) => [r.operation, r]),
  );
  const [draft, setDraft] = useState<Clp>(saved);
  const [reviewing, setReviewing] = useState(false);
  const [addedNames, setAddedNames] = useState<Record<string, string>>({});
  const save = useSaveClp(appId, doc.className);

  const fieldNames = Object.keys(doc.fields).filter((f) => !UNPROTECTABLE.has(f));
  const pointerFields = Object.entries(doc.fields)
    .filter(([, spec]) => (spec.type === 'Pointer' && spec.targetClass === '_User') || spec.type === 'Array')
    .map(([name]) => name);
  const userIds = useMemo(
    () =>
      [...principalsOf(draft), ...Object.keys(protectedFieldsOf(draft))].filter(
        (p) => p !== '*' && p !== 'authenticated' && !p.includes(':'),
      ),
    [draft],
  );
  const looked = useUserNames(appId, userIds);
  const names = { ...looked.data, ...addedNames };
  const addName = (id: string, name: string) => setAddedNames((n) => ({ ...n, [id]: name }));

  const changes = describeClpChanges(saved, draft, names);
  const dirty = JSON.stringify(saved) !== JSON.stringify(draft);
  // Until the service's rules are known, no warning: a built-in class's stored CLP may not apply.
  // Nor for an operation a built-in rule refuses to anonymous callers whatever the CLP says (_User
  // update and delete: only the row's own user): the CLP cannot make it public.
  const closedToPublic = (rules.data?.operations ?? [])
    .filter((r) => r.fixed || (r.builtIn && !r.anonymous.allowed && r.anonymous.decidedBy === 'system'))
    .map((r) => r.operation);
  const warnings =
    rules.data || rules.isError
      ? dangerousSettings(doc.className, draft, fieldNames, new Set(closedToPublic))
      : [];
  const edit = (next: Clp) => {
    setDraft(next);
    setReviewing(false);
  };

  // What saving sends and what its impact is previewed on: the whole document, never a part.
  const whole = completeClp(draft);
  const confirm = () =>
    save.mutate(whole, {
      onSuccess: () => {
        toast.success(`Access to ${doc.className} saved`);
        setReviewing(false);
      },
      onError: (err) => toast.error(err, 'Could not save the access settings'),
    });

  return (
    <div className="space-y-6">
      {warnings.length > 0 && (
        <ul
          role="alert"
          data-testid="clp-warnings"
          className="space-y-1 rounded-md border border-amber-400 bg-amber-50 p-3 text-sm text-amber-900 dark:bg-amber-950 dark:text-amber-100"
        >
          {warnings.map((w) => (
            <li key={w.id} data-warning={w.id}>
              ⚠ {w.text}
            </li>
          ))}
        </ul>
      )}

      {rules.data && <ServiceRules rules={rules.data.operations} />}

      <section aria-label="Class-level permissions">
        <h2 className="mb-2 font-semibold">Class-level permissions</h2>
        <ClpMatrix
          appId={appId}
          clp={draft}
          onChange={edit}
          canWrite={canWrite}
          pointerFields={pointerFields}
          names={names}
          onUserAdded={addName}
          fixed={fixed}
        />
      </section>

      <section aria-label="Protected fields">
        <h2 className="mb-2 font-semibold">Protected fields</h2>
        <ProtectedFieldsEditor
          appId={appId}
          patterns={protectedFieldsOf(draft)}
          onChange={(patterns) => edit(setProtectedFields(draft, patterns))}
          fields={fieldNames}
          pointerFields={pointerFields}
          canWrite={canWrite}
          names={names}
          onUserAdded={addName}
        />
      </section>

      {canWrite && dirty && (
        <section aria-label="Review changes" className="space-y-3" data-testid="clp-review">
          <div className="flex gap-2">
            {!reviewing && (
              <Button variant="primary" onClick={() => setReviewing(true)}>
                Review changes
              </Button>
            )}
            <Button
              onClick={() => {
                setDraft(saved);
                setReviewing(false);
              }}
            >
              Discard changes
            </Button>
          </div>
          {reviewing && (
            <>
              <div data-testid="clp-diff">
                <h3 className="mb-1 text-sm font-semibold">Changes</h3>
                <ul className="mb-2 list-disc pl-5 text-sm" data-testid="clp-diff-words">
                  {changes.map((line) => (
                    <li key={line}>{line}</li>
                  ))}
                </ul>
                <JsonDiff before={saved} after={draft} />
              </div>
              <ImpactPreview
                appId={appId}
                // The whole draft: the CLP with its protectedFields, as saving writes it.
                draft={{
                  className: doc.className,
                  changes: [{ kind: 'clp', classLevelPermissions: whole }],
                }}
                confirmLabel={save.isPending ? 'Saving…' : 'Save'}
                busy={save.isPending}
                onConfirm={confirm}
                onCancel={() => setReviewing(false)}
              />
            </>
          )}
        </section>
      )}

      <section aria-label="What a user sees">
        <h2 className="mb-2 font-semibold">What a user sees</h2>
        <p className="mb-2 text-xs text-slate-500 dark:text-slate-400">
          With the saved settings, as the service answers for that user; a draft's effect is in its impact
          preview.
        </p>
        <ProtectedPreview appId={appId} className={doc.className} fields={fieldNames} />
      </section>
    </div>
  );
}

/** Security → Class access: pick a class (kept in ?class=), edit its CLP and protectedFields. */
export function AccessTab({ appId }: { appId: string }) {
  const [search, setSearch] = useSearchParams();
  const canWrite = useCanWrite();
  const schemas = useQuery({
    queryKey: securityKeys.schemas(appId),
    queryFn: ({ signal }) => fetchSchemas(appId, signal).then((r) => r.results),
  });
  const className = search.get('class') ?? '';
  const doc = schemas.data?.find((s) => s.className === className);

  return (
    <QueryState
      query={schemas}
      loading="Loading classes…"
      failed="Could not load the classes"
      errorText={errorText}
    >
      {(classes) => (
        <div className="space-y-4">
          <label className="flex items-center gap-2 text-sm">
            <span>Class</span>
            <Select
              aria-label="Class"
              value={doc ? className : ''}
              onChange={(e) => setSearch(e.target.value ? { class: e.target.value } : {})}
            >
              <option value="">Choose a class…</option>
              {classes.map((s) => (
                <option key={s.className} value={s.className}>
                  {s.className}
                </option>
              ))}
            </Select>
            {!canWrite && (
              <span className="text-xs text-slate-500">Read-only: you can see but not change access.</span>
            )}
          </label>
          {className && !doc && (
            <p role="alert" className="text-sm text-red-600">
              There is no class {className}.
            </p>
          )}
          {doc && (
            <ClassAccessEditor
              key={`${doc.className}:${JSON.stringify(doc.classLevelPermissions ?? {})}`}
              appId={appId}
              doc={doc}
              canWrite={canWrite}
            />
          )}
          {!doc && !className && (
            <p className="text-sm text-slate-500">
              Choose a class to see and edit who may {CLP_OPERATIONS.join(', ')} it, and which fields each
              caller sees.
            </p>
          )}
        </div>
      )}
    </QueryState>
  );
}

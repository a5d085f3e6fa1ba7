import { useState } from 'react';
import { Button } from '../../../components/ui/button.tsx';
import { Select } from '../../../components/ui/input.tsx';
import { UserPicker } from '../../../components/user-picker.tsx';
import { type OperationRule, useRoleNames } from '../../../lib/security-api.ts';
import {
  CLP_OPERATIONS,
  type Clp,
  type ClpOperation,
  grants,
  pointerFieldsOf,
  principalLabel,
  principalsOf,
  removePrincipal,
  requiresAuthentication,
  ruleWords,
  setGrant,
  setPointerField,
  setRequiresAuthentication,
  setUserField,
  userFieldsOf,
} from './clp.ts';

type Column =
  | { kind: 'principal'; key: string }
  | { kind: 'requiresAuthentication' }
  | { kind: 'pointer'; field: string };

const columnId = (c: Column) =>
  c.kind === 'principal' ? c.key : c.kind === 'pointer' ? `pointer:${c.field}` : 'requiresAuthentication';

/** One cell: a checkbox for admins, a mark for read-only users. */
function Cell({
  checked,
  label,
  testId,
  canWrite,
  disabled,
  onChange,
}: {
  checked: boolean;
  label: string;
  testId: string;
  canWrite: boolean;
  disabled?: boolean;
  onChange: (on: boolean) => void;
}) {
  if (disabled) return <span className="text-slate-300 dark:text-slate-600">—</span>;
  if (!canWrite) {
    return (
      <span
        role="img"
        aria-label={`${label}: ${checked ? 'yes' : 'no'}`}
        data-testid={testId}
        data-checked={checked}
      >
        {checked ? '✓' : '·'}
      </span>
    );
  }
  return (
    <input
      type="checkbox"
      aria-label={label}
      data-testid={testId}
      checked={checked}
      onChange={(e) => onChange(e.target.checked)}
    />
  );
}

/**
 * The operations × principals matrix of a class's CLP: the public, authenticated users
 * (requiresAuthentication), roles, users and pointer fields; then readUserFields/writeUserFields.
 * An operation the service decides by a fixed rule (a built-in class's own rule, from the
 * service's rules) has no cells: its row says what the service does and why.
 */
export function ClpMatrix({
  appId,
  clp,
  onChange,
  canWrite,
  pointerFields,
  names,
  onUserAdded,
  fixed = {},
}: {
  appId: string;
  clp: Clp;
  onChange: (next: Clp) => void;
  canWrite: boolean;
  /** The operations no CLP changes, by operation, with the service's rule. */
  fixed?: Partial<Record<ClpOperation, OperationRule>>;
  /** The class's fields that may point at a user (pointer permissions). */
  pointerFields: string[];
  /** Usernames by user id. */
  names: Record<string, string>;
  onUserAdded: (id: string, username: string) => void;
}) {
  // Columns added in this session that grant nothing yet (the CLP itself cannot hold them).
  const [extra, setExtra] = useState<string[]>([]);
  const [roleToAdd, setRoleToAdd] = useState('');
  const roles = useRoleNames(appId);
  const principals = [...new Set([...principalsOf(clp), ...extra])];
  const columns: Column[] = [
    { kind: 'principal', key: '*' },
    { kind: 'requiresAuthentication' },
    ...principals.filter((p) => p !== '*').map((key): Column => ({ kind: 'principal', key })),
    ...pointerFields.map((field): Column => ({ kind: 'pointer', field })),
  ];
  const heading = (c: Column) =>
    c.kind === 'principal'
      ? c.key === '*'
        ? 'Public (*)'
        : principalLabel(c.key, names)
      : c.kind === 'pointer'
        ? `users in ${c.field}`
        : 'Authenticated users (requiresAuthentication)';

  const cell = (op: ClpOperation, c: Column) => {
    const id = columnId(c);
    const testId = `clp-${op}-${id}`;
    if (c.kind === 'principal') {
      return (
        <Cell
          checked={grants(clp, op, c.key)}
          label={`${op} for ${principalLabel(c.key, names)}`}
          testId={testId}
          canWrite={canWrite}
          onChange={(on) => onChange(setGrant(clp, op, c.key, on))}
        />
      );
    }
    if (c.kind === 'requiresAuthentication') {
      return (
        <Cell
          checked={requiresAuthentication(clp, op)}
          label={`${op} requires authentication`}
          testId={testId}
          canWrite={canWrite}
          onChange={(on) => onChange(setRequiresAuthentication(clp, op, on))}
        />
      );
    }
    return (
      <Cell
        checked={pointerFieldsOf(clp, op).includes(c.field)}
        label={`${op} for users in ${c.field}`}
        testId={testId}
        canWrite={canWrite}
        // Pointer permissions never grant create (a new row points at no one yet) nor addField.
        disabled={op === 'create' || op === 'addField'}
        onChange={(on) => onChange(setPointerField(clp, op, c.field, on))}
      />
    );
  };

  const addColumn = (key: string) => setExtra((xs) => (xs.includes(key) ? xs : [...xs, key]));

  return (
    <div className="space-y-3">
      <div className="overflow-x-auto">
        <table className="text-sm" data-testid="clp-matrix">
          <thead>
            <tr className="border-b border-slate-200 dark:border-slate-700">
              <th className="px-2 py-1 text-left">Operation</th>
              {columns.map((c) => (
                <th key={columnId(c)} className="px-2 py-1 text-center font-medium" data-column={columnId(c)}>
                  <span>{heading(c)}</span>
                  {canWrite && c.kind === 'principal' && c.key !== '*' && (
                    <button
                      type="button"
                      aria-label={`Remove ${principalLabel(c.key, names)}`}
                      className="ml-1 text-slate-400 hover:text-red-600"
                      onClick={() => {
                        setExtra((xs) => xs.filter((x) => x !== c.key));
                        onChange(removePrincipal(clp, c.key));
                      }}
                    >
                      ×
                    </button>
                  )}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {CLP_OPERATIONS.map((op) => (
              <tr key={op} className="border-b border-slate-100 dark:border-slate-800">
                <th scope="row" className="px-2 py-1 text-left font-mono font-normal">
                  {op}
                </th>
                {fixed[op] ? (
                  <td
                    colSpan={columns.length}
                    className="px-2 py-1 text-left text-slate-600 dark:text-slate-300"
                    data-testid={`clp-fixed-${op}`}
                  >
                    <span className="mr-1 rounded bg-slate-200 px-1 text-xs font-semibold dark:bg-slate-700">
                      fixed
                    </span>
                    {ruleWords(fixed[op]!)}: {fixed[op]!.builtIn?.reason ?? 'a rule of the service'} (not
                    editable: the service applies this rule whatever the class-level permissions say)
                  </td>
                ) : (
                  columns.map((c) => (
                    <td key={columnId(c)} className="px-2 py-1 text-center">
                      {cell(op, c)}
                    </td>
                  ))
                )}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <p className="text-xs text-slate-500 dark:text-slate-400">
        An operation with requiresAuthentication refuses callers without a session first (even when it is
        public) and lets every signed-in user in. An empty row is master-key only.
      </p>
      {canWrite && (
        <div className="flex flex-wrap items-center gap-3">
          <span className="flex items-center gap-1">
            <Select aria-label="Role to add" value={roleToAdd} onChange={(e) => setRoleToAdd(e.target.value)}>
              <option value="">Role…</option>
              {(roles.data ?? []).map((r) => (
                <option key={r} value={r}>
                  {r}
                </option>
              ))}
            </Select>
            <Button
              size="sm"
              disabled={!roleToAdd}
              onClick={() => {
                addColumn(`role:${roleToAdd}`);
                setRoleToAdd('');
              }}
            >
              Add role
            </Button>
          </span>
          <UserPicker
            appId={appId}
            label="Add a user to the matrix"
            testId="clp-add-user"
            onPick={(u) => {
              onUserAdded(u.objectId, u.username ?? u.objectId);
              addColumn(u.objectId);
            }}
          />
        </div>
      )}
      {pointerFields.length > 0 && (
        <div className="text-sm" data-testid="clp-user-fields">
          {(['readUserFields', 'writeUserFields'] as const).map((key) => (
            <p key={key} className="flex flex-wrap items-center gap-3">
              <span className="font-mono text-xs">{key}</span>
              <span className="text-xs text-slate-500">
                ({key === 'readUserFields' ? 'find, get, count' : 'update, delete'} for the users these fields
                point at)
              </span>
              {pointerFields.map((f) => (
                <span key={f} className="flex items-center gap-1">
                  <Cell
                    checked={userFieldsOf(clp, key).includes(f)}
                    label={`${key} ${f}`}
                    testId={`clp-${key}-${f}`}
                    canWrite={canWrite}
                    onChange={(on) => onChange(setUserField(clp, key, f, on))}
                  />
                  <span className="font-mono text-xs">{f}</span>
                </span>
              ))}
            </p>
          ))}
        </div>
      )}
    </div>
  );
}

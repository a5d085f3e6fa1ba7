import { useState } from 'react';
import { Button } from '../../../components/ui/button.tsx';
import { Input, Select } from '../../../components/ui/input.tsx';
import { UserPicker } from '../../../components/user-picker.tsx';
import { useRoleNames } from '../../../lib/security-api.ts';
import { type ProtectedFields, principalLabel } from './clp.ts';

type PatternKind = '*' | 'authenticated' | 'role' | 'userField' | 'user';

/**
 * protectedFields: per pattern (`*`, `authenticated`, `role:X`, `userField:f`, a user id) the
 * fields it hides. A caller matched by several patterns has only the fields all of them list hidden.
 */
export function ProtectedFieldsEditor({
  appId,
  patterns,
  onChange,
  fields,
  pointerFields,
  canWrite,
  names,
  onUserAdded,
}: {
  appId: string;
  patterns: ProtectedFields;
  onChange: (next: ProtectedFields) => void;
  /** The class's fields that may be protected. */
  fields: string[];
  pointerFields: string[];
  canWrite: boolean;
  names: Record<string, string>;
  onUserAdded: (id: string, username: string) => void;
}) {
  const [kind, setKind] = useState<PatternKind>('*');
  const [value, setValue] = useState('');
  const roles = useRoleNames(appId);
  const toggle = (pattern: string, field: string, on: boolean) => {
    const current = patterns[pattern] ?? [];
    onChange({ ...patterns, [pattern]: on ? [...current, field] : current.filter((f) => f !== field) });
  };
  const remove = (pattern: string) => {
    const { [pattern]: _gone, ...rest } = patterns;
    onChange(rest);
  };
  const add = (pattern: string) => {
    if (!(pattern in patterns)) onChange({ ...patterns, [pattern]: [] });
    setValue('');
  };
  const entries = Object.entries(patterns);

  return (
    <div className="space-y-3">
      {entries.length === 0 ? (
        <p className="text-sm text-slate-500">
          No pattern: every caller that may read a row sees all its fields.
        </p>
      ) : (
        <ul className="space-y-2" data-testid="pf-patterns">
          {entries.map(([pattern, hidden]) => (
            <li
              key={pattern}
              data-pattern={pattern}
              className="rounded-md border border-slate-200 p-2 text-sm dark:border-slate-700"
            >
              <div className="flex items-center justify-between">
                <span>
                  <code className="font-mono">{pattern}</code>{' '}
                  <span className="text-xs text-slate-500">({principalLabel(pattern, names)})</span>
                </span>
                {canWrite && (
                  <Button
                    size="sm"
                    variant="ghost"
                    aria-label={`Remove pattern ${pattern}`}
                    onClick={() => remove(pattern)}
                  >
                    Remove
                  </Button>
                )}
              </div>
              <div className="mt-1 flex flex-wrap gap-3">
                {canWrite ? (
                  fields.map((f) => (
                    <label key={f} className="flex items-center gap-1">
                      <input
                        type="checkbox"
                        data-testid={`pf-${pattern}-${f}`}
                        aria-label={`${pattern} hides ${f}`}
                        checked={hidden.includes(f)}
                        onChange={(e) => toggle(pattern, f, e.target.checked)}
                      />
                      <span className="font-mono text-xs">{f}</span>
                    </label>
                  ))
                ) : (
                  <span className="font-mono text-xs" data-testid={`pf-${pattern}-list`}>
                    {hidden.length ? `hides ${hidden.join(', ')}` : 'hides nothing'}
                  </span>
                )}
              </div>
            </li>
          ))}
        </ul>
      )}
      {canWrite && (
        <div className="flex flex-wrap items-center gap-2" data-testid="pf-add">
          <Select
            aria-label="New pattern kind"
            value={kind}
            onChange={(e) => {
              setKind(e.target.value as PatternKind);
              setValue('');
            }}
          >
            <option value="*">* (everyone)</option>
            <option value="authenticated">authenticated</option>
            <option value="role">role:…</option>
            <option value="userField">userField:…</option>
            <option value="user">a user</option>
          </Select>
          {kind === 'role' && (
            <Select aria-label="New pattern role" value={value} onChange={(e) => setValue(e.target.value)}>
              <option value="">Role…</option>
              {(roles.data ?? []).map((r) => (
                <option key={r} value={r}>
                  {r}
                </option>
              ))}
            </Select>
          )}
          {kind === 'userField' &&
            (pointerFields.length ? (
              <Select aria-label="New pattern field" value={value} onChange={(e) => setValue(e.target.value)}>
                <option value="">Field…</option>
                {pointerFields.map((f) => (
                  <option key={f} value={f}>
                    {f}
                  </option>
                ))}
              </Select>
            ) : (
              <Input
                aria-label="New pattern field"
                value={value}
                onChange={(e) => setValue(e.target.value)}
              />
            ))}
          {kind === 'user' ? (
            <UserPicker
              appId={appId}
              label="New pattern user"
              testId="pf-add-user"
              onPick={(u) => {
                onUserAdded(u.objectId, u.username ?? u.objectId);
                add(u.objectId);
              }}
            />
          ) : (
            <Button
              size="sm"
              disabled={(kind === 'role' || kind === 'userField') && !value}
              onClick={() =>
                add(kind === 'role' ? `role:${value}` : kind === 'userField' ? `userField:${value}` : kind)
              }
            >
              Add pattern
            </Button>
          )}
        </div>
      )}
    </div>
  );
}

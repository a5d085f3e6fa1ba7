import { CONFIG_PARAMETER_NAME_PATTERN } from '@bds/client/protocol';
import { type FormEvent, useId, useMemo, useState } from 'react';
import { Button } from '../../../components/ui/button.tsx';
import { Dialog } from '../../../components/ui/dialog.tsx';
import { Input, Select } from '../../../components/ui/input.tsx';
import { useShortcut } from '../../../lib/shortcuts.ts';
import { toast } from '../../../lib/toast.ts';
import { useSaveConfig } from '../api/config.ts';
import { buildUpdate, type ConfigDoc, diffConfig } from '../lib/diff.ts';
import { defaultText, PARAM_TYPES, type ParamType, parseText, toText, typeOfValue } from '../lib/values.ts';
import { ChangeList } from './change-list.tsx';
import { ValueEditor } from './value-editor.tsx';

interface DraftRow {
  name: string;
  type: ParamType;
  text: string;
  masterKeyOnly: boolean;
  deleted: boolean;
  isNew: boolean;
}

function rowsOf(doc: ConfigDoc): DraftRow[] {
  return Object.keys(doc.params)
    .sort()
    .map((name) => {
      const value = doc.params[name];
      const type = typeOfValue(value);
      return {
        name,
        type,
        text: toText(value, type),
        masterKeyOnly: Boolean(doc.masterKeyOnly?.[name]),
        deleted: false,
        isNew: false,
      };
    });
}

/** Edits the config parameters as a draft; saving shows the diff first. */
export function ConfigEditor({ appId, doc, canWrite }: { appId: string; doc: ConfigDoc; canWrite: boolean }) {
  const [rows, setRows] = useState<DraftRow[]>(() => rowsOf(doc));
  const [reviewing, setReviewing] = useState(false);
  const [newName, setNewName] = useState('');
  const [newType, setNewType] = useState<ParamType>('string');
  const save = useSaveConfig(appId);
  const formId = useId();

  const errors = useMemo(() => {
    const out = new Map<string, string>();
    for (const r of rows) {
      if (r.deleted) continue;
      const p = parseText(r.text, r.type);
      if (!p.ok) out.set(r.name, p.error);
    }
    return out;
  }, [rows]);

  const changes = useMemo(() => {
    if (errors.size > 0) return [];
    const params: Record<string, unknown> = {};
    const masterKeyOnly: Record<string, boolean> = {};
    for (const r of rows) {
      if (r.deleted) continue;
      const p = parseText(r.text, r.type);
      if (p.ok) params[r.name] = p.value;
      if (r.masterKeyOnly) masterKeyOnly[r.name] = true;
    }
    return diffConfig(doc, { params, masterKeyOnly });
  }, [rows, doc, errors]);

  const update = (name: string, patch: Partial<DraftRow>) =>
    setRows((rs) => rs.map((r) => (r.name === name ? { ...r, ...patch } : r)));

  const addRow = (e: FormEvent) => {
    e.preventDefault();
    const name = newName.trim();
    if (!CONFIG_PARAMETER_NAME_PATTERN.test(name)) {
      toast.error(new Error('Use 1-200 letters, digits, "_", "." or "-".'), 'Invalid parameter name');
      return;
    }
    if (rows.some((r) => r.name === name && !r.deleted)) {
      toast.error(new Error(`${name} already exists.`), 'Invalid parameter name');
      return;
    }
    setRows((rs) => [
      ...rs.filter((r) => r.name !== name),
      { name, type: newType, text: defaultText(newType), masterKeyOnly: false, deleted: false, isNew: true },
    ]);
    setNewName('');
  };

  const dirty = changes.length > 0;
  const openReview = () => {
    if (errors.size > 0) {
      toast.error(
        new Error([...errors].map(([n, e]) => `${n}: ${e}`).join('; ')),
        'Fix the invalid values first',
      );
      return;
    }
    if (dirty) setReviewing(true);
  };
  useShortcut('s', 'Review and save config changes', openReview, 'Config');

  const confirm = () =>
    save.mutate(buildUpdate(changes), {
      onSuccess: () => {
        setReviewing(false);
        toast.success(
          'Config saved',
          `${changes.length} parameter${changes.length === 1 ? '' : 's'} changed.`,
        );
      },
      onError: (err) => toast.error(err, 'Config not saved'),
    });

  return (
    <div className="space-y-4">
      <div className="overflow-x-auto rounded-md border border-slate-200 dark:border-slate-700">
        <table className="w-full text-sm">
          <thead className="bg-slate-50 text-left text-xs text-slate-500 uppercase dark:bg-slate-900 dark:text-slate-400">
            <tr>
              <th className="px-3 py-2">Parameter</th>
              <th className="px-3 py-2">Type</th>
              <th className="px-3 py-2">Value</th>
              <th className="px-3 py-2" title="Only callers with the master key can read it">
                Master key only
              </th>
              <th className="px-3 py-2">
                <span className="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {rows.length === 0 && (
              <tr>
                <td colSpan={5} className="px-3 py-4 text-slate-500">
                  No parameters yet.
                </td>
              </tr>
            )}
            {rows.map((r) => (
              <tr
                key={r.name}
                data-testid={`param-${r.name}`}
                className={`border-t border-slate-200 align-top dark:border-slate-700 ${r.deleted ? 'opacity-50' : ''}`}
              >
                <td className={`px-3 py-2 font-mono ${r.deleted ? 'line-through' : ''}`}>
                  {r.name}
                  {r.isNew && <span className="ml-2 text-xs text-emerald-600">new</span>}
                </td>
                <td className="px-3 py-2">
                  <Select
                    aria-label={`Type of ${r.name}`}
                    value={r.type}
                    disabled={!canWrite || r.deleted}
                    onChange={(e) => {
                      const type = e.target.value as ParamType;
                      update(r.name, { type, text: defaultText(type) });
                    }}
                  >
                    {PARAM_TYPES.map((t) => (
                      <option key={t} value={t}>
                        {t}
                      </option>
                    ))}
                  </Select>
                </td>
                <td className="w-full px-3 py-2">
                  <ValueEditor
                    label={`Value of ${r.name}`}
                    type={r.type}
                    text={r.text}
                    disabled={!canWrite || r.deleted}
                    onChange={(text) => update(r.name, { text })}
                  />
                  {errors.has(r.name) && <p className="mt-1 text-xs text-red-600">{errors.get(r.name)}</p>}
                </td>
                <td className="px-3 py-2 text-center">
                  <input
                    type="checkbox"
                    aria-label={`${r.name} is master key only`}
                    checked={r.masterKeyOnly}
                    disabled={!canWrite || r.deleted}
                    onChange={(e) => update(r.name, { masterKeyOnly: e.target.checked })}
                    className="size-4 accent-indigo-600"
                  />
                </td>
                <td className="px-3 py-2">
                  {canWrite &&
                    (r.isNew ? (
                      <Button
                        size="sm"
                        variant="ghost"
                        onClick={() => setRows((rs) => rs.filter((x) => x.name !== r.name))}
                      >
                        Remove
                      </Button>
                    ) : (
                      <Button
                        size="sm"
                        variant="ghost"
                        onClick={() => update(r.name, { deleted: !r.deleted })}
                      >
                        {r.deleted ? 'Undo' : 'Delete'}
                      </Button>
                    ))}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>

      {canWrite && (
        <form onSubmit={addRow} className="flex flex-wrap items-end gap-2" aria-label="Add parameter">
          <label htmlFor={`${formId}-name`} className="flex flex-col gap-1 text-xs font-medium">
            New parameter
            <Input
              id={`${formId}-name`}
              value={newName}
              onChange={(e) => setNewName(e.target.value)}
              placeholder="name"
              aria-label="New parameter name"
            />
          </label>
          <label htmlFor={`${formId}-type`} className="flex flex-col gap-1 text-xs font-medium">
            Type
            <Select
              id={`${formId}-type`}
              value={newType}
              onChange={(e) => setNewType(e.target.value as ParamType)}
              aria-label="New parameter type"
            >
              {PARAM_TYPES.map((t) => (
                <option key={t} value={t}>
                  {t}
                </option>
              ))}
            </Select>
          </label>
          <Button type="submit">Add</Button>
          <div className="ml-auto flex gap-2">
            <Button disabled={!dirty} onClick={() => setRows(rowsOf(doc))}>
              Discard
            </Button>
            <Button variant="primary" disabled={!dirty && errors.size === 0} onClick={openReview}>
              Review changes{dirty ? ` (${changes.length})` : ''}
            </Button>
          </div>
        </form>
      )}
      {!canWrite && (
        <p className="text-sm text-slate-500">Read-only console users cannot change the config.</p>
      )}

      <Dialog
        open={reviewing}
        onClose={() => setReviewing(false)}
        title="Review config changes"
        wide
        footer={
          <>
            <Button onClick={() => setReviewing(false)}>Cancel</Button>
            <Button variant="primary" onClick={confirm} disabled={save.isPending}>
              {save.isPending ? 'Saving…' : 'Save changes'}
            </Button>
          </>
        }
      >
        <ChangeList changes={changes} />
      </Dialog>
    </div>
  );
}

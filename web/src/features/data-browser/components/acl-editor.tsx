/**
 * The ACL editor of one row or of a selection of rows: principals (the public, users found by
 * username or email, roles) with read and write toggles, the effective result in words, then the
 * impact preview before saving.
 */
import { useState } from 'react';
import { ImpactPreview } from '../../../components/impact-preview.tsx';
import { Button } from '../../../components/ui/button.tsx';
import { Dialog } from '../../../components/ui/dialog.tsx';
import { UserPicker, userName } from '../../../components/user-picker.tsx';
import { useRoleNames } from '../../../lib/security-api.ts';
import { toast } from '../../../lib/toast.ts';
import type { Row } from '../../../lib/wire.ts';
import { useAclNames } from '../api/acl-names.ts';
import { dataApi } from '../api/bff.ts';
import {
  type Acl,
  aclWords,
  addPrincipal,
  commonAcl,
  principalOf,
  removePrincipal,
  roleKey,
  rowAcl,
  setPermission,
  wireAcl,
} from '../lib/acl.ts';

export function AclEditor({
  appId,
  className,
  rows,
  onClose,
  onSaved,
}: {
  appId: string;
  className: string;
  /** The rows to set the ACL of (one for a row, several for a selection). */
  rows: Row[];
  onClose(): void;
  onSaved(): void;
}) {
  const shared = commonAcl(rows.map((r) => r.ACL));
  const [acl, setAcl] = useState<Acl>(() => shared ?? rowAcl(rows[0]?.ACL));
  const [step, setStep] = useState<'edit' | 'review'>('edit');
  const [busy, setBusy] = useState(false);
  const [role, setRole] = useState('');
  const roleNames = useRoleNames(appId);
  const keys = Object.keys(acl);
  const userIds = keys.filter((k) => principalOf(k).kind === 'user');
  const roles = keys.flatMap((k) => {
    const p = principalOf(k);
    return p.kind === 'role' ? [p.role] : [];
  });
  const names = useAclNames(appId, userIds, roles);
  const [picked, setPicked] = useState<Record<string, string>>({});
  const known = { users: { ...picked, ...names.data?.users }, inheritors: names.data?.inheritors ?? {} };
  const words = aclWords(acl, known);
  const ids = rows.map((r) => r.objectId);
  const labelOf = (key: string) => {
    const p = principalOf(key);
    if (p.kind === 'public') return 'public';
    if (p.kind === 'role') return `role ${p.role}`;
    return `user ${known.users[p.userId] ?? p.userId}`;
  };

  const save = async () => {
    setBusy(true);
    const value = wireAcl(acl);
    try {
      if (ids.length === 1) {
        await dataApi.setAcl(appId, className, ids[0]!, value);
        toast.success(`Saved the ACL of ${ids[0]}`);
      } else {
        const res = await dataApi.bulkUpdate(appId, className, ids, 'ACL', value);
        if (res.failed) toast.error(new Error(`${res.failed} refused`), `ACL saved on ${res.succeeded} rows`);
        else toast.success(`Saved the ACL of ${res.succeeded} rows`);
      }
      onSaved();
    } catch (err) {
      toast.error(err, 'Saving the ACL refused');
      setBusy(false);
    }
  };

  const title =
    ids.length === 1 ? `ACL of ${className} ${ids[0]}` : `ACL of ${ids.length} rows of ${className}`;
  return (
    <Dialog open title={title} onClose={onClose} wide>
      <div className="space-y-3 text-sm" data-testid="acl-editor">
        {shared === null && (
          <p className="rounded bg-amber-100 p-2 text-amber-900" data-testid="acl-differs">
            The selected rows have different ACLs. Saving sets this one (the first row's, as edited) on all{' '}
            {ids.length} rows.
          </p>
        )}
        {step === 'edit' ? (
          <>
            <table className="w-full text-left">
              <thead>
                <tr className="border-b">
                  <th className="py-1">Who</th>
                  <th>Read</th>
                  <th>Write</th>
                  <th />
                </tr>
              </thead>
              <tbody>
                {keys.map((key) => (
                  <tr key={key} className="border-b" data-principal={key}>
                    <td className="py-1">{labelOf(key)}</td>
                    {(['read', 'write'] as const).map((op) => (
                      <td key={op}>
                        <input
                          type="checkbox"
                          aria-label={`${op} ${labelOf(key)}`}
                          checked={!!acl[key]?.[op]}
                          onChange={(e) => setAcl(setPermission(acl, key, op, e.target.checked))}
                        />
                      </td>
                    ))}
                    <td>
                      <button
                        type="button"
                        className="text-xs text-red-700 hover:underline"
                        aria-label={`remove ${labelOf(key)}`}
                        onClick={() => setAcl(removePrincipal(acl, key))}
                      >
                        remove
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            <div className="flex flex-wrap items-center gap-2">
              {!('*' in acl) && (
                <Button size="sm" onClick={() => setAcl(addPrincipal(acl, '*'))}>
                  Add public
                </Button>
              )}
              <UserPicker
                appId={appId}
                label="add user"
                placeholder="add a user: username or email"
                onPick={(u) => {
                  setPicked({ ...picked, [u.objectId]: userName(u) });
                  setAcl(addPrincipal(acl, u.objectId));
                }}
              />
              <select
                aria-label="add role"
                className="rounded border px-1 py-0.5 dark:bg-gray-800"
                value={role}
                onChange={(e) => setRole(e.target.value)}
              >
                <option value="">add a role…</option>
                {(roleNames.data ?? [])
                  .filter((r) => !(roleKey(r) in acl))
                  .map((r) => (
                    <option key={r}>{r}</option>
                  ))}
              </select>
              <Button
                size="sm"
                disabled={!role}
                onClick={() => {
                  setAcl(addPrincipal(acl, roleKey(role)));
                  setRole('');
                }}
              >
                Add role
              </Button>
            </div>
          </>
        ) : null}
        <div
          className={`rounded p-2 ${words.masterOnly ? 'border-2 border-red-600 bg-red-50 dark:bg-red-950' : 'bg-gray-50 dark:bg-gray-800'}`}
          data-testid="acl-words"
        >
          {words.masterOnly && (
            <p className="font-bold text-red-700 dark:text-red-300" data-testid="acl-master-only">
              Master key only: no user, role or anonymous caller can read or write{' '}
              {ids.length === 1 ? 'this row' : 'these rows'}.
            </p>
          )}
          <p data-testid="acl-read-words">{words.read}</p>
          <p data-testid="acl-write-words">{words.write}</p>
        </div>
        {step === 'edit' ? (
          <div className="flex justify-end gap-2">
            <Button onClick={onClose}>Cancel</Button>
            <Button variant="primary" onClick={() => setStep('review')}>
              Review impact
            </Button>
          </div>
        ) : (
          <ImpactPreview
            appId={appId}
            className={className}
            change={{ kind: 'acl', objectIds: ids, ACL: wireAcl(acl) }}
            confirmLabel="Save ACL"
            busy={busy}
            onConfirm={save}
            onCancel={() => setStep('edit')}
          />
        )}
      </div>
    </Dialog>
  );
}

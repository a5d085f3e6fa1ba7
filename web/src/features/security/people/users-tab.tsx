import { credentialRefusal, isCredentialField } from '@bds/client/protocol';
import { type FormEvent, useState } from 'react';
import { QueryState } from '../../../components/query-state.tsx';
import { Button } from '../../../components/ui/button.tsx';
import { Dialog } from '../../../components/ui/dialog.tsx';
import { Input, Textarea } from '../../../components/ui/input.tsx';
import { api, seg } from '../../../lib/api.ts';
import { useCanWrite } from '../../../lib/session.ts';
import { toast } from '../../../lib/toast.ts';
import { type ConsoleAppUser, usePeopleWrite, useUsers } from './api.ts';
import { SessionsTable } from './sessions-tab.tsx';
import { SetPassword } from './set-password.tsx';

/** Fields the service manages or the console derives: not edited as "other fields". */
const MANAGED = new Set([
  'objectId',
  'createdAt',
  'updatedAt',
  'ACL',
  'username',
  'email',
  'emailVerified',
  'password',
  'sessionToken',
  'authData',
  'anonymous',
  'mfa',
]);

/** Users: search, create, edit fields, reset mail, MFA status, anonymous users, their sessions. */
export function UsersTab({ appId }: { appId: string }) {
  const canWrite = useCanWrite();
  const [search, setSearch] = useState('');
  const [selected, setSelected] = useState<string | null>(null);
  const users = useUsers(appId, search.trim());
  const current = users.data?.results.find((u) => u.objectId === selected);
  return (
    <div className="space-y-4">
      <div className="flex items-center gap-2">
        <Input
          aria-label="Search users"
          placeholder="Username or email…"
          value={search}
          onChange={(e) => setSearch(e.target.value)}
          className="w-72"
        />
        {canWrite && <CreateUser appId={appId} onCreated={setSelected} />}
      </div>
      <QueryState query={users} loading="Loading users…" failed="Could not load the users">
        {(data) => (
          <>
            <p className="text-sm text-slate-500" data-testid="users-count">
              {data.count} {data.count === 1 ? 'user' : 'users'}
              {data.count > data.results.length &&
                ` (the newest ${data.results.length} shown: search to narrow)`}
            </p>
            <table className="w-full text-left text-sm">
              <thead className="text-slate-500">
                <tr>
                  <th className="py-1">Username</th>
                  <th>Email</th>
                  <th>MFA</th>
                  <th>Created</th>
                </tr>
              </thead>
              <tbody>
                {data.results.map((u) => (
                  <tr
                    key={u.objectId}
                    data-testid="user-row"
                    data-username={u.username}
                    aria-selected={u.objectId === selected}
                    className="border-t border-slate-100 aria-selected:bg-indigo-50 dark:border-slate-800 dark:aria-selected:bg-indigo-950"
                  >
                    <td className="py-1">
                      <button
                        type="button"
                        className="font-medium text-indigo-700 hover:underline dark:text-indigo-300"
                        onClick={() => setSelected(u.objectId)}
                      >
                        {u.username ?? u.objectId}
                      </button>
                      {u.anonymous && (
                        <span
                          data-testid="anonymous-badge"
                          className="ml-2 rounded bg-slate-200 px-1.5 text-xs text-slate-700 dark:bg-slate-700 dark:text-slate-200"
                        >
                          anonymous
                        </span>
                      )}
                    </td>
                    <td>{u.email ?? '—'}</td>
                    <td data-testid="mfa-status">{u.mfa ? 'enabled' : 'off'}</td>
                    <td>{new Date(u.createdAt).toLocaleString()}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </>
        )}
      </QueryState>
      {current && (
        <UserPanel
          key={`${current.objectId}:${current.updatedAt}`}
          appId={appId}
          user={current}
          canWrite={canWrite}
        />
      )}
    </div>
  );
}

function CreateUser({ appId, onCreated }: { appId: string; onCreated: (userId: string) => void }) {
  const [open, setOpen] = useState(false);
  const [form, setForm] = useState({ username: '', password: '', email: '' });
  const create = usePeopleWrite(appId, (base, body: Record<string, string>) =>
    api.post<{ objectId: string }>(`${base}/users`, body),
  );
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const body: Record<string, string> = { username: form.username.trim(), password: form.password };
    if (form.email.trim()) body.email = form.email.trim();
    create.mutate(body, {
      onSuccess: (created) => {
        toast.success(`User ${body.username} created`);
        setOpen(false);
        setForm({ username: '', password: '', email: '' });
        onCreated(created.objectId);
      },
      onError: (err) => toast.error(err, 'Could not create the user'),
    });
  };
  return (
    <>
      <Button variant="primary" onClick={() => setOpen(true)}>
        Create user
      </Button>
      <Dialog open={open} title="Create user" onClose={() => setOpen(false)}>
        <form onSubmit={submit} className="space-y-2 text-sm">
          {(['username', 'password', 'email'] as const).map((f) => (
            <label key={f} className="flex flex-col gap-1">
              <span className="capitalize">{f}</span>
              <Input
                type={f === 'password' ? 'password' : 'text'}
                autoComplete="off"
                value={form[f]}
                onChange={(e) => setForm({ ...form, [f]: e.target.value })}
              />
            </label>
          ))}
          <div className="flex justify-end">
            <Button
              type="submit"
              variant="primary"
              disabled={!form.username.trim() || !form.password || create.isPending}
            >
              Create
            </Button>
          </div>
        </form>
      </Dialog>
    </>
  );
}

function otherFieldsOf(user: ConsoleAppUser): Record<string, unknown> {
  return Object.fromEntries(Object.entries(user).filter(([k]) => !MANAGED.has(k)));
}

function UserPanel({ appId, user, canWrite }: { appId: string; user: ConsoleAppUser; canWrite: boolean }) {
  const [username, setUsername] = useState(user.username ?? '');
  const [email, setEmail] = useState(user.email ?? '');
  const [others, setOthers] = useState(JSON.stringify(otherFieldsOf(user), null, 2));
  const [problem, setProblem] = useState<string | null>(null);
  const save = usePeopleWrite(appId, (base, body: Record<string, unknown>) =>
    api.put(`${base}/users/${seg(user.objectId)}`, body),
  );
  const reset = usePeopleWrite(appId, (base, _: null) =>
    api.post<{ sentTo: string }>(`${base}/users/${seg(user.objectId)}/password-reset`),
  );

  const submit = (e: FormEvent) => {
    e.preventDefault();
    setProblem(null);
    let parsed: unknown;
    try {
      parsed = JSON.parse(others || '{}');
    } catch {
      parsed = null;
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      setProblem('Other fields must be a JSON object.');
      return;
    }
    // Credentials are not plain fields: a password has its own control (the bff refuses it too).
    const credential = Object.keys(parsed).find((k) => isCredentialField('_User', k));
    if (credential) {
      setProblem(credentialRefusal(credential));
      return;
    }
    const before = otherFieldsOf(user);
    const changes: Record<string, unknown> = {};
    if (username !== (user.username ?? '')) changes.username = username;
    if (email !== (user.email ?? '')) changes.email = email === '' ? { __op: 'Delete' } : email;
    for (const [k, v] of Object.entries(parsed)) {
      if (JSON.stringify(v) !== JSON.stringify(before[k])) changes[k] = v;
    }
    for (const k of Object.keys(before)) if (!(k in parsed)) changes[k] = { __op: 'Delete' };
    if (Object.keys(changes).length === 0) {
      setProblem('Nothing changed.');
      return;
    }
    save.mutate(changes, {
      onSuccess: () => toast.success(`User ${username} saved`),
      onError: (err) => toast.error(err, 'Could not save the user'),
    });
  };

  return (
    <section
      aria-label={`User ${user.username ?? user.objectId}`}
      className="space-y-4 rounded-md border border-slate-200 p-4 dark:border-slate-700"
    >
      <div className="flex items-center justify-between">
        <h2 className="text-base font-semibold">
          {user.username}
          {user.anonymous && (
            <span className="ml-2 text-xs font-normal text-slate-500">(anonymous user)</span>
          )}
        </h2>
        <span className="text-xs text-slate-500">
          MFA {user.mfa ? 'enabled' : 'not enrolled'} · {user.objectId}
        </span>
      </div>
      <form onSubmit={submit} className="grid max-w-xl gap-2 text-sm">
        <label className="flex flex-col gap-1">
          <span>Username</span>
          <Input value={username} readOnly={!canWrite} onChange={(e) => setUsername(e.target.value)} />
        </label>
        <label className="flex flex-col gap-1">
          <span>Email</span>
          <Input value={email} readOnly={!canWrite} onChange={(e) => setEmail(e.target.value)} />
        </label>
        <label className="flex flex-col gap-1">
          <span>Other fields (JSON)</span>
          <Textarea
            rows={Math.min(12, Math.max(3, others.split('\n').length))}
            value={others}
            readOnly={!canWrite}
            onChange={(e) => setOthers(e.target.value)}
          />
        </label>
        {problem && (
          <p role="alert" className="text-red-600">
            {problem}
          </p>
        )}
        {canWrite && (
          <div className="flex gap-2">
            <Button type="submit" variant="primary" disabled={save.isPending}>
              Save user
            </Button>
            <Button
              disabled={!user.email || reset.isPending}
              title={user.email ? undefined : 'The user has no email address.'}
              onClick={() =>
                reset.mutate(null, {
                  onSuccess: (r) => toast.success('Password reset mail sent', `To ${r.sentTo}`),
                  onError: (err) => toast.error(err, 'Could not send the reset mail'),
                })
              }
            >
              Send password reset mail
            </Button>
          </div>
        )}
      </form>
      {canWrite && (
        <SetPassword appId={appId} userId={user.objectId} username={user.username ?? user.objectId} />
      )}
      <section aria-label="Sessions of this user" className="space-y-1">
        <h3 className="text-sm font-semibold">Sessions</h3>
        <SessionsTable appId={appId} userId={user.objectId} />
      </section>
    </section>
  );
}

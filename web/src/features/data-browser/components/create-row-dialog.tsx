/** Create forms for the classes whose rows need more than an empty body: roles and users. */

import { useState } from 'react';
import { Dialog } from '../../../components/ui/dialog.tsx';
import { errorText } from '../../../lib/api.ts';
import { toast } from '../../../lib/toast.ts';
import { dataApi } from '../api/bff.ts';

/** `_Role` needs a name and `_User` a username and password: "Add row" opens a form for them. */
export const needsCreateForm = (className: string): boolean => className === '_Role' || className === '_User';

export function CreateRowDialog({
  appId,
  className,
  onClose,
  onCreated,
}: {
  appId: string;
  className: string;
  onClose(): void;
  onCreated(objectId: string): void;
}) {
  const [name, setName] = useState('');
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [email, setEmail] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const isRole = className === '_Role';
  const ready = isRole ? name.trim() !== '' : username.trim() !== '' && password !== '';
  const create = async () => {
    setBusy(true);
    setError(null);
    try {
      const res = isRole
        ? await dataApi.createRole(appId, name.trim())
        : await dataApi.createUser(appId, {
            username: username.trim(),
            password,
            ...(email.trim() ? { email: email.trim() } : {}),
          });
      toast.success(isRole ? `Created role ${name.trim()}` : `Created user ${username.trim()}`);
      onCreated(res.objectId);
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };
  const input = 'w-full rounded border px-2 py-1 dark:bg-gray-800';
  return (
    <Dialog
      open
      title={isRole ? 'New role' : 'New user'}
      onClose={onClose}
      footer={
        <>
          <button type="button" className="rounded border px-3 py-1" onClick={onClose}>
            Cancel
          </button>
          <button
            type="submit"
            form="create-row-form"
            className="rounded bg-blue-600 px-3 py-1 text-white disabled:opacity-50"
            disabled={!ready || busy}
          >
            {isRole ? 'Create role' : 'Create user'}
          </button>
        </>
      }
    >
      <form
        id="create-row-form"
        className="space-y-2 text-sm"
        onSubmit={(e) => {
          e.preventDefault();
          if (ready && !busy) void create();
        }}
      >
        {isRole ? (
          <label className="block">
            Name
            <input className={input} value={name} onChange={(e) => setName(e.target.value)} autoFocus />
            <span className="text-xs text-gray-500">
              Letters, digits, spaces, _ and -. Public read by default.
            </span>
          </label>
        ) : (
          <>
            <label className="block">
              Username
              <input
                className={input}
                value={username}
                onChange={(e) => setUsername(e.target.value)}
                autoComplete="off"
                autoFocus
              />
            </label>
            <label className="block">
              Password
              <input
                className={input}
                type="password"
                value={password}
                onChange={(e) => setPassword(e.target.value)}
                autoComplete="new-password"
              />
            </label>
            <label className="block">
              Email (optional)
              <input
                className={input}
                type="email"
                value={email}
                onChange={(e) => setEmail(e.target.value)}
              />
            </label>
          </>
        )}
        {error && (
          <p className="text-red-600" role="alert">
            {error}
          </p>
        )}
      </form>
    </Dialog>
  );
}

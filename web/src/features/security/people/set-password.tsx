import { useState } from 'react';
import { Button } from '../../../components/ui/button.tsx';
import { Dialog } from '../../../components/ui/dialog.tsx';
import { Input } from '../../../components/ui/input.tsx';
import { api, seg } from '../../../lib/api.ts';
import { toast } from '../../../lib/toast.ts';
import { usePeopleWrite } from './api.ts';

/**
 * The one control that sets a user's password (PUT .../users/:id/password): the new password
 * twice, and a confirmation that says every session of the user ends. The bff audits it as
 * "password changed", without the value; every other route refuses a password.
 */
export function SetPassword({
  appId,
  userId,
  username,
}: {
  appId: string;
  userId: string;
  username: string;
}) {
  const [open, setOpen] = useState(false);
  const [password, setPassword] = useState('');
  const [repeat, setRepeat] = useState('');
  const save = usePeopleWrite(appId, (base, body: { password: string }) =>
    api.put(`${base}/users/${seg(userId)}/password`, body),
  );
  const close = () => {
    setOpen(false);
    setPassword('');
    setRepeat('');
  };
  const differ = repeat !== '' && repeat !== password;
  return (
    <>
      <Button onClick={() => setOpen(true)}>Set password…</Button>
      <Dialog
        open={open}
        title={`Set password for ${username}`}
        onClose={close}
        footer={
          <>
            <Button onClick={close}>Cancel</Button>
            <Button
              variant="primary"
              disabled={password === '' || repeat !== password || save.isPending}
              onClick={async () => {
                // Awaited, not per-call callbacks: the saved user's panel is drawn anew (and this
                // control with it) before those would run.
                try {
                  await save.mutateAsync({ password });
                  toast.success(`Password of ${username} changed`, 'Their sessions have ended.');
                  close();
                } catch (err) {
                  toast.error(err, 'Could not set the password');
                }
              }}
            >
              Set password
            </Button>
          </>
        }
      >
        <div className="space-y-2 text-sm">
          <label className="flex flex-col gap-1">
            <span>New password</span>
            <Input
              type="password"
              autoComplete="new-password"
              value={password}
              onChange={(e) => setPassword(e.target.value)}
            />
          </label>
          <label className="flex flex-col gap-1">
            <span>Repeat the new password</span>
            <Input
              type="password"
              autoComplete="new-password"
              value={repeat}
              onChange={(e) => setRepeat(e.target.value)}
            />
          </label>
          {differ && (
            <p role="alert" className="text-red-600">
              The two passwords differ.
            </p>
          )}
          <p className="text-slate-600 dark:text-slate-400">
            Every session of {username} ends: they must log in again.
          </p>
        </div>
      </Dialog>
    </>
  );
}

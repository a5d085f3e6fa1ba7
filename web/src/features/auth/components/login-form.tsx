import { type FormEvent, useId, useState } from 'react';
import { Button } from '../../../components/ui/button.tsx';
import { Input } from '../../../components/ui/input.tsx';
import { isApiError } from '../../../lib/api.ts';
import type { ConsoleUser } from '../../../lib/session.ts';
import { login } from '../api/session.ts';

/** Username + password, then (when the user is enrolled) a 6-digit authentication code. */
export function LoginForm({ onLoggedIn }: { onLoggedIn: (user: ConsoleUser) => void }) {
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [totp, setTotp] = useState('');
  const [step, setStep] = useState<'password' | 'totp'>('password');
  const [error, setError] = useState<{ code?: number; text: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const id = useId();

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const res = await login({ username, password, ...(step === 'totp' ? { totp } : {}) });
      if ('mfaRequired' in res) {
        setStep('totp');
        setTotp('');
      } else {
        onLoggedIn(res.user);
      }
    } catch (err) {
      setError(
        isApiError(err)
          ? { code: err.code, text: err.error }
          : { text: err instanceof Error ? err.message : String(err) },
      );
    } finally {
      setBusy(false);
    }
  };

  return (
    <form onSubmit={submit} className="flex flex-col gap-3" aria-label="Log in">
      {step === 'password' ? (
        <>
          <label htmlFor={`${id}-user`} className="flex flex-col gap-1 text-sm font-medium">
            Username
            <Input
              id={`${id}-user`}
              name="username"
              autoComplete="username"
              value={username}
              onChange={(e) => setUsername(e.target.value)}
              required
              autoFocus
            />
          </label>
          <label htmlFor={`${id}-password`} className="flex flex-col gap-1 text-sm font-medium">
            Password
            <Input
              id={`${id}-password`}
              name="password"
              type="password"
              autoComplete="current-password"
              value={password}
              onChange={(e) => setPassword(e.target.value)}
              required
            />
          </label>
        </>
      ) : (
        <label htmlFor={`${id}-totp`} className="flex flex-col gap-1 text-sm font-medium">
          Authentication code
          <span className="text-xs font-normal text-slate-500 dark:text-slate-400">
            Enter the 6-digit code from your authenticator app for {username}.
          </span>
          <Input
            id={`${id}-totp`}
            name="totp"
            inputMode="numeric"
            autoComplete="one-time-code"
            pattern="\d{6}"
            maxLength={6}
            value={totp}
            onChange={(e) => setTotp(e.target.value.replace(/\D/g, ''))}
            required
            autoFocus
          />
        </label>
      )}
      {error && (
        <p
          role="alert"
          data-testid="login-error"
          className="rounded-md bg-red-50 px-3 py-2 text-sm text-red-800 dark:bg-red-950 dark:text-red-200"
        >
          {error.text}
          {error.code !== undefined && <span className="ml-1 font-mono text-xs">(code {error.code})</span>}
        </p>
      )}
      <Button type="submit" variant="primary" disabled={busy} className="justify-center">
        {busy ? 'Checking…' : step === 'totp' ? 'Verify' : 'Log in'}
      </Button>
      {step === 'totp' && (
        <Button
          variant="ghost"
          onClick={() => {
            setStep('password');
            setError(null);
          }}
        >
          Back
        </Button>
      )}
    </form>
  );
}

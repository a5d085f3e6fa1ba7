import { useQueryClient } from '@tanstack/react-query';
import { Navigate, useNavigate, useSearchParams } from 'react-router';
import { LoginForm } from '../../features/auth/components/login-form.tsx';
import { sessionKey, useSession } from '../../lib/session.ts';

/** Only same-app paths are followed after login (no open redirect). */
function safeNext(next: string | null): string {
  return next?.startsWith('/') && !next.startsWith('//') ? next : '/';
}

export default function LoginRoute() {
  const [params] = useSearchParams();
  const next = safeNext(params.get('next'));
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const session = useSession();
  if (session.data) return <Navigate to={next} replace />;
  return (
    <main className="flex min-h-full items-center justify-center bg-slate-50 p-4 dark:bg-slate-950">
      <div className="w-full max-w-sm rounded-lg border border-slate-200 bg-white p-6 shadow-sm dark:border-slate-800 dark:bg-slate-900">
        <h1 className="mb-1 text-xl font-semibold">Console</h1>
        <p className="mb-5 text-sm text-slate-500 dark:text-slate-400">Log in to manage your apps.</p>
        <LoginForm
          onLoggedIn={(user) => {
            queryClient.setQueryData(sessionKey, user);
            navigate(next, { replace: true });
          }}
        />
      </div>
    </main>
  );
}

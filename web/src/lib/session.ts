import { useQuery } from '@tanstack/react-query';
import { ApiError, api } from './api.ts';

/** The logged-in console user: shared by the shell and every feature (write controls, access). */

export interface ConsoleUser {
  username: string;
  role: 'admin' | 'read-only';
  apps?: string[];
}

export const sessionKey = ['session'] as const;

/** The logged-in console user, or null when there is no session. */
export async function getSession(): Promise<ConsoleUser | null> {
  try {
    const res = await api.get<{ user: ConsoleUser }>('/session');
    return res.user;
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return null;
    throw err;
  }
}

export function useSession() {
  return useQuery({ queryKey: sessionKey, queryFn: getSession, staleTime: 5 * 60_000, retry: false });
}

/** False for read-only console users (the bff refuses their writes anyway): hide write controls. */
export function useCanWrite(): boolean {
  return useSession().data?.role === 'admin';
}

import { api } from '../../../lib/api.ts';
import type { ConsoleUser } from '../../../lib/session.ts';

export type LoginAnswer = { mfaRequired: true } | { user: ConsoleUser };

export const login = (body: { username: string; password: string; totp?: string }) =>
  api.post<LoginAnswer>('/login', body);

export const logout = () => api.post<{ ok: true }>('/logout');

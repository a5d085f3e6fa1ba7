import { useSyncExternalStore } from 'react';
import { isApiError } from './api.ts';

/** A tiny toast store: any module can push a result or an error; the Toaster renders them. */

export type ToastKind = 'success' | 'error' | 'info';

export interface Toast {
  id: number;
  kind: ToastKind;
  title: string;
  detail?: string;
  /** The service's (or bff's) error code, shown next to its text. */
  code?: number;
}

let toasts: Toast[] = [];
let nextId = 1;
const listeners = new Set<() => void>();
const emit = () => {
  for (const l of listeners) l();
};

export function dismissToast(id: number): void {
  toasts = toasts.filter((t) => t.id !== id);
  emit();
}

/** Toasts on screen at once: older ones give way, so a run of edits never stacks over the page. */
export const MAX_TOASTS = 3;

export function pushToast(t: Omit<Toast, 'id'>, timeoutMs = t.kind === 'error' ? 8000 : 3000): number {
  const id = nextId++;
  toasts = [...toasts.slice(-(MAX_TOASTS - 1)), { ...t, id }];
  emit();
  if (timeoutMs > 0) setTimeout(() => dismissToast(id), timeoutMs);
  return id;
}

export const toast = {
  success: (title: string, detail?: string) => pushToast({ kind: 'success', title, detail }),
  info: (title: string, detail?: string) => pushToast({ kind: 'info', title, detail }),
  /** Shows an ApiError's code and text, or any other error's message. */
  error: (err: unknown, title = 'Request failed') =>
    isApiError(err)
      ? pushToast({ kind: 'error', title, detail: err.error, code: err.code })
      : pushToast({ kind: 'error', title, detail: err instanceof Error ? err.message : String(err) }),
};

const subscribe = (l: () => void) => {
  listeners.add(l);
  return () => listeners.delete(l);
};

export function useToasts(): Toast[] {
  return useSyncExternalStore(
    subscribe,
    () => toasts,
    () => toasts,
  );
}

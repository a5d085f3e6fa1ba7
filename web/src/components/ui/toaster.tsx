import { dismissToast, type ToastKind, useToasts } from '../../lib/toast.ts';

const KIND: Record<ToastKind, string> = {
  success: 'border-emerald-500 bg-emerald-50 text-emerald-900 dark:bg-emerald-950 dark:text-emerald-100',
  error: 'border-red-500 bg-red-50 text-red-900 dark:bg-red-950 dark:text-red-100',
  info: 'border-sky-500 bg-sky-50 text-sky-900 dark:bg-sky-950 dark:text-sky-100',
};

/** Results and errors; an error shows the service's code and text. */
export function Toaster() {
  const toasts = useToasts();
  return (
    <section
      aria-label="Notifications"
      aria-live="polite"
      className="pointer-events-none fixed right-4 bottom-4 z-50 flex w-96 max-w-[calc(100vw-2rem)] flex-col gap-2"
    >
      {toasts.map((t) => (
        <div
          key={t.id}
          role={t.kind === 'error' ? 'alert' : 'status'}
          data-testid={`toast-${t.kind}`}
          className={`pointer-events-auto flex items-start gap-3 rounded-md border-l-4 px-3 py-2 text-sm shadow-md ${KIND[t.kind]}`}
        >
          <div className="min-w-0 flex-1">
            <p className="font-semibold">{t.title}</p>
            {(t.detail || t.code !== undefined) && (
              <p className="break-words">
                {t.code !== undefined && <span className="mr-1 font-mono text-xs">[{t.code}]</span>}
                {t.detail}
              </p>
            )}
          </div>
          <button
            type="button"
            aria-label="Dismiss"
            onClick={() => dismissToast(t.id)}
            className="text-lg leading-none opacity-60 hover:opacity-100"
          >
            ×
          </button>
        </div>
      ))}
    </section>
  );
}

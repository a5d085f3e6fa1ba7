import { useCallback, useEffect, useSyncExternalStore } from 'react';

/** Light/dark theme: follows the system unless the user picked one; the choice is persisted. */

export type ThemeChoice = 'system' | 'light' | 'dark';
export const THEME_STORAGE_KEY = 'bds-console-theme';
const query = () => window.matchMedia('(prefers-color-scheme: dark)');

function readChoice(): ThemeChoice {
  try {
    const v = localStorage.getItem(THEME_STORAGE_KEY);
    return v === 'light' || v === 'dark' ? v : 'system';
  } catch {
    return 'system';
  }
}

let choice: ThemeChoice = typeof window === 'undefined' ? 'system' : readChoice();
const listeners = new Set<() => void>();

export function resolvedTheme(c: ThemeChoice = choice): 'light' | 'dark' {
  if (c !== 'system') return c;
  return query().matches ? 'dark' : 'light';
}

function apply(): void {
  const dark = resolvedTheme() === 'dark';
  document.documentElement.classList.toggle('dark', dark);
  document.documentElement.style.colorScheme = dark ? 'dark' : 'light';
}

export function setTheme(next: ThemeChoice): void {
  choice = next;
  try {
    if (next === 'system') localStorage.removeItem(THEME_STORAGE_KEY);
    else localStorage.setItem(THEME_STORAGE_KEY, next);
  } catch {
    // storage unavailable: the choice lasts for this page only
  }
  apply();
  for (const l of listeners) l();
}

/** system -> light -> dark -> system */
export function cycleTheme(): void {
  setTheme(choice === 'system' ? 'light' : choice === 'light' ? 'dark' : 'system');
}

const subscribe = (l: () => void) => {
  listeners.add(l);
  return () => listeners.delete(l);
};

export function useTheme(): {
  choice: ThemeChoice;
  resolved: 'light' | 'dark';
  setTheme: (c: ThemeChoice) => void;
} {
  const current = useSyncExternalStore(
    subscribe,
    () => choice,
    () => choice,
  );
  const resolved = useSyncExternalStore(
    subscribe,
    () => resolvedTheme(),
    () => 'light' as const,
  );
  const set = useCallback((c: ThemeChoice) => setTheme(c), []);
  return { choice: current, resolved, setTheme: set };
}

/** Keeps the page in step with the system setting while the choice is "system". */
export function useSystemThemeSync(): void {
  useEffect(() => {
    apply();
    const mq = query();
    const onChange = () => {
      if (choice === 'system') {
        apply();
        for (const l of listeners) l();
      }
    };
    mq.addEventListener('change', onChange);
    return () => mq.removeEventListener('change', onChange);
  }, []);
}

import { useEffect, useRef, useSyncExternalStore } from 'react';

/**
 * Keyboard shortcuts. A shortcut is a key or a two-key sequence ("g d"); components register
 * theirs with `useShortcut` while mounted, and the help overlay (`?`) lists what is registered.
 * Keys typed into inputs, textareas, selects and editable content are ignored.
 */

export interface Shortcut {
  /** "?", "t", "g d", "Escape" */
  keys: string;
  description: string;
  group: string;
}

interface Entry extends Shortcut {
  id: number;
  run: (event: KeyboardEvent) => void;
  /** Listed in the overlay only: a component handles these keys itself (the grid's arrow keys). */
  helpOnly?: boolean;
}

let entries: Entry[] = [];
/** The entries the keyboard listener acts on. */
const live = () => entries.filter((e) => !e.helpOnly);
let nextId = 1;
const listeners = new Set<() => void>();
const emit = () => {
  for (const l of listeners) l();
};

function register(entry: Omit<Entry, 'id'>): () => void {
  const id = nextId++;
  entries = [...entries, { ...entry, id }];
  emit();
  return () => {
    entries = entries.filter((e) => e.id !== id);
    emit();
  };
}

export function useShortcut(
  keys: string,
  description: string,
  handler: (event: KeyboardEvent) => void,
  group = 'General',
): void {
  const ref = useRef(handler);
  ref.current = handler;
  useEffect(
    () => register({ keys, description, group, run: (e) => ref.current(e) }),
    [keys, description, group],
  );
}

/** Lists keys that a component handles itself (e.g. on focused elements) in the `?` overlay. */
export function useShortcutHelp(keys: string, description: string, group = 'General'): void {
  useEffect(
    () => register({ keys, description, group, helpOnly: true, run: () => undefined }),
    [keys, description, group],
  );
}

const subscribe = (l: () => void) => {
  listeners.add(l);
  return () => listeners.delete(l);
};

export function useRegisteredShortcuts(): Shortcut[] {
  return useSyncExternalStore(
    subscribe,
    () => entries,
    () => entries,
  );
}

function isTyping(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false;
  const tag = target.tagName;
  return tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT' || target.isContentEditable;
}

/** Installs the one document-level listener; call once in the app shell. */
export function useShortcutListener(): void {
  useEffect(() => {
    let pending: string | null = null;
    let pendingTimer: ReturnType<typeof setTimeout> | undefined;
    const onKey = (e: KeyboardEvent) => {
      if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey) return;
      if (e.key !== 'Escape' && isTyping(e.target)) return;
      const key = e.key;
      if (pending) {
        const seq = `${pending} ${key}`;
        pending = null;
        clearTimeout(pendingTimer);
        const hit = live()
          .reverse()
          .find((s) => s.keys === seq);
        if (hit) {
          e.preventDefault();
          hit.run(e);
          return;
        }
      }
      if (live().some((s) => s.keys.startsWith(`${key} `))) {
        pending = key;
        pendingTimer = setTimeout(() => {
          pending = null;
        }, 1200);
        return;
      }
      const hit = live()
        .reverse()
        .find((s) => s.keys === key);
      if (hit) {
        e.preventDefault();
        hit.run(e);
      }
    };
    document.addEventListener('keydown', onKey);
    return () => {
      document.removeEventListener('keydown', onKey);
      clearTimeout(pendingTimer);
    };
  }, []);
}

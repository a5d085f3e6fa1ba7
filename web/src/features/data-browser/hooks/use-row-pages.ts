/**
 * Rows of a class fetched page by page as the grid scrolls: keyset pagination after the previous
 * page's last row, skip only for jumps. Pages live in a ref; `version` re-renders the grid.
 */

import { useCallback, useEffect, useRef, useState } from 'react';
import { errorText } from '../../../lib/api.ts';
import type { Where } from '../../../lib/filter.ts';
import type { Viewpoint } from '../../../lib/security-api.ts';
import type { FieldType, Row } from '../../../lib/wire.ts';
import { dataApi } from '../api/bff.ts';
import { earlyKeys, FIRST_PAGE_SIZE, takeEarly } from '../api/early.ts';
import { viewAsApi } from '../api/viewas.ts';
import { pageRequest, type Sort } from '../lib/keyset.ts';

export const PAGE_SIZE = FIRST_PAGE_SIZE;

/** Key of live mode's mark on a row object (never sent: rows are edited field by field). */
export const LIVE_MARK = '__live';
/** Live mode's marks: a row created elsewhere, or changed elsewhere. Deleted rows leave the grid. */
export type LiveMark = 'new' | 'changed';
export type LiveOp = 'create' | 'update' | 'delete' | 'enter' | 'leave';

interface State {
  pages: Map<number, Row[]>;
  inflight: Map<number, Promise<Row[]>>;
  controller: AbortController;
}

export interface RowPages {
  version: number;
  /** Rows of the loaded pages once the last page has been read (deleted rows left out), else null. */
  end: number | null;
  error: string | null;
  rowAt(index: number): Row | undefined;
  ensure(first: number, last: number): void;
  patch(objectId: string, changes: Record<string, unknown>): void;
  reset(): void;
  loadedRows(): Row[];
  /** Rows created elsewhere while in live mode, shown first (highlighted). */
  extra: number;
  /** Applies a realtime event to the loaded rows in place (live mode); a deleted row leaves. */
  live(op: LiveOp, object: Row): void;
  /** Takes a row out of the grid (it was deleted); the rows after it move up. */
  remove(objectId: string): void;
}

export function useRowPages(
  appId: string,
  className: string,
  where: Where,
  sort: Sort,
  sortType: FieldType,
  /** "View as": the rows this viewpoint gets (through the service's evaluate); null: as master. */
  viewpoint: Viewpoint | null = null,
): RowPages {
  const key = viewpoint
    ? JSON.stringify([earlyKeys.firstPage(appId, className, where, sort), viewpoint])
    : earlyKeys.firstPage(appId, className, where, sort);
  const state = useRef<State | null>(null);
  const [version, setVersion] = useState(0);
  const [end, setEnd] = useState<number | null>(null);
  const [error, setError] = useState<string | null>(null);
  /** Bumped by reset(): a new `load` makes the grid ask for its visible pages again. */
  const [epoch, setEpoch] = useState(0);
  const keyRef = useRef('');
  /** Rows created elsewhere (live mode), newest first, before the loaded pages. */
  const fresh = useRef<Row[]>([]);
  const [extra, setExtra] = useState(0);
  /**
   * Positions (in the loaded pages, ascending) of rows deleted since they were read: skipped by
   * rowAt, so the rows after them move up while the pages keep their size.
   */
  const gone = useRef<number[]>([]);

  if (keyRef.current !== key || !state.current) {
    state.current?.controller.abort();
    state.current = { pages: new Map(), inflight: new Map(), controller: new AbortController() };
    keyRef.current = key;
    fresh.current = [];
    gone.current = [];
  }

  // biome-ignore lint/correctness/useExhaustiveDependencies: a new query key starts afresh
  useEffect(() => {
    setEnd(null);
    setError(null);
    setExtra(0);
    setVersion((v) => v + 1);
  }, [key]);

  // Leaving aborts the requests on their way and drops their state: a component that comes back
  // (React may unmount and mount again, as StrictMode does) starts afresh instead of waiting on
  // aborted requests.
  useEffect(
    () => () => {
      state.current?.controller.abort();
      state.current = null;
    },
    [],
  );
  const current = () => {
    if (!state.current)
      state.current = { pages: new Map(), inflight: new Map(), controller: new AbortController() };
    return state.current;
  };

  // biome-ignore lint/correctness/useExhaustiveDependencies: the viewpoint is part of `key`
  const load = useCallback(
    (index: number): Promise<Row[]> => {
      const s = current();
      const have = s.pages.get(index);
      if (have) return Promise.resolve(have);
      const running = s.inflight.get(index);
      if (running) return running;
      const p = (async () => {
        // Wait for the previous page when it is on its way: its last row is our cursor.
        const prevRunning = index > 0 ? s.inflight.get(index - 1) : undefined;
        if (prevRunning) await prevRunning.catch(() => undefined);
        const prev = s.pages.get(index - 1);
        const early = index === 0 && epoch === 0 && !viewpoint ? takeEarly<Row[]>(key) : undefined;
        const req = pageRequest(where, sort, index, PAGE_SIZE, prev?.[prev.length - 1], sortType);
        const results = early
          ? await early
          : viewpoint
            ? (await viewAsApi.find(appId, className, viewpoint, req)).results
            : (await dataApi.find(appId, className, req, s.controller.signal)).results;
        if (state.current !== s) return results;
        s.pages.set(index, results);
        if (results.length < PAGE_SIZE) setEnd(index * PAGE_SIZE + results.length);
        setVersion((v) => v + 1);
        return results;
      })();
      s.inflight.set(index, p);
      p.catch((err: unknown) => {
        if ((err as Error)?.name !== 'AbortError' && state.current === s) setError(errorText(err));
      }).finally(() => {
        if (state.current === s) s.inflight.delete(index);
      });
      return p;
    },
    // epoch: a reset renews `load`, and with it the grid's request for its visible pages
    [appId, className, where, sort, sortType, key, epoch],
  );

  /** The position in the loaded pages of the grid's `index`-th row after the fresh ones. */
  const position = useCallback((i: number) => {
    let at = i;
    for (const g of gone.current) if (g <= at) at++;
    return at;
  }, []);

  const ensure = useCallback(
    (first: number, last: number) => {
      const n = fresh.current.length;
      const a = Math.max(0, Math.floor(position(Math.max(0, first - n)) / PAGE_SIZE));
      const b = Math.max(a, Math.floor(position(Math.max(0, last - n)) / PAGE_SIZE));
      for (let i = a; i <= b; i++) void load(i).catch(() => undefined);
    },
    [load, position],
  );

  const rowAt = useCallback(
    (index: number) => {
      const n = fresh.current.length;
      if (index < n) return fresh.current[index];
      const i = position(index - n);
      const page = state.current?.pages.get(Math.floor(i / PAGE_SIZE));
      return page?.[i % PAGE_SIZE];
    },
    [position],
  );

  /** Takes the row out of the fresh rows or the loaded pages; false when it is not loaded. */
  const drop = useCallback((objectId: string): boolean => {
    const f = fresh.current.findIndex((r) => r.objectId === objectId);
    if (f >= 0) {
      fresh.current = fresh.current.filter((_, i) => i !== f);
      setExtra(fresh.current.length);
      return true;
    }
    for (const [index, page] of state.current?.pages ?? []) {
      const i = page.findIndex((r) => r.objectId === objectId);
      const at = index * PAGE_SIZE + i;
      if (i < 0 || gone.current.includes(at)) continue;
      gone.current = [...gone.current, at].sort((a, b) => a - b);
      return true;
    }
    return false;
  }, []);

  const remove = useCallback(
    (objectId: string) => {
      if (drop(objectId)) setVersion((v) => v + 1);
    },
    [drop],
  );

  const live = useCallback(
    (op: LiveOp, object: Row) => {
      const id = object.objectId;
      if (!id) return;
      if (op === 'delete' || op === 'leave') return remove(id);
      const mark = (row: Row, m: LiveMark) => ({ ...row, [LIVE_MARK]: m }) as Row;
      let found = false;
      const replace = (list: Row[]) => {
        const i = list.findIndex((r) => r.objectId === id);
        if (i < 0) return;
        found = true;
        list[i] = mark(object, list === fresh.current ? 'new' : 'changed');
      };
      replace(fresh.current);
      for (const page of state.current?.pages.values() ?? []) replace(page);
      if (!found && (op === 'create' || op === 'enter')) {
        fresh.current = [mark(object, 'new'), ...fresh.current];
        setExtra(fresh.current.length);
      }
      setVersion((v) => v + 1);
    },
    [remove],
  );

  const patch = useCallback((objectId: string, changes: Record<string, unknown>) => {
    for (const page of state.current?.pages.values() ?? []) {
      const i = page.findIndex((r) => r.objectId === objectId);
      if (i >= 0) {
        const next = { ...page[i]!, ...changes } as Row;
        for (const [k, v] of Object.entries(changes)) if (v === undefined) delete next[k];
        page[i] = next;
      }
    }
    setVersion((v) => v + 1);
  }, []);

  const reset = useCallback(() => {
    state.current?.controller.abort();
    state.current = { pages: new Map(), inflight: new Map(), controller: new AbortController() };
    fresh.current = [];
    gone.current = [];
    setExtra(0);
    setEnd(null);
    setError(null);
    setEpoch((e) => e + 1);
    setVersion((v) => v + 1);
  }, []);

  const loadedRows = useCallback(() => {
    const pages = [...(state.current?.pages ?? [])].flatMap(([index, page]) =>
      page.filter((_, i) => !gone.current.includes(index * PAGE_SIZE + i)),
    );
    return [...fresh.current, ...pages];
  }, []);

  return {
    version,
    end: end === null ? null : end - gone.current.length,
    error,
    rowAt,
    ensure,
    patch,
    reset,
    loadedRows,
    extra,
    live,
    remove,
  };
}

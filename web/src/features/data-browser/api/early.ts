/**
 * Requests started before the component that needs them mounts (a class link pressed, a class
 * opened): the first rows and the count travel beside the schema list instead of after it. Each
 * answer is taken once, while fresh. (A class opened by URL has them started even earlier, by
 * public/early-requests.js.)
 */
import type { Where } from '../../../lib/filter.ts';
import type { Row } from '../../../lib/wire.ts';
import { pageRequest, parseSort, type Sort } from '../lib/keyset.ts';
import { dataApi } from './bff.ts';

const FRESH_MS = 10_000;
const started = new Map<string, { at: number; answer: Promise<unknown> }>();

/** Starts `load` under `key` unless a fresh one runs already. */
export function startEarly<T>(key: string, load: () => Promise<T>): void {
  const have = started.get(key);
  if (have && performance.now() - have.at < FRESH_MS) return;
  const answer = load();
  answer.catch(() => started.delete(key));
  started.set(key, { at: performance.now(), answer });
}

/** The early answer under `key`, once, when it is fresh. */
export function takeEarly<T>(key: string): Promise<T> | undefined {
  const have = started.get(key);
  started.delete(key);
  return have && performance.now() - have.at < FRESH_MS ? (have.answer as Promise<T>) : undefined;
}

export const FIRST_PAGE_SIZE = 100;

export const earlyKeys = {
  count: (appId: string, cls: string, whereText: string) => JSON.stringify(['count', appId, cls, whereText]),
  firstPage: (appId: string, cls: string, where: Where, sort: Sort) =>
    JSON.stringify(['rows', appId, cls, where, sort]),
};

export function startFirstPage(appId: string, cls: string, where: Where, sort: Sort): void {
  startEarly(earlyKeys.firstPage(appId, cls, where, sort), () =>
    dataApi
      .find(appId, cls, pageRequest(where, sort, 0, FIRST_PAGE_SIZE, undefined))
      .then((r): Row[] => r.results),
  );
}

export function parseWhere(text: string | null): Where {
  if (!text) return {};
  try {
    const v = JSON.parse(text);
    return v && typeof v === 'object' && !Array.isArray(v) ? v : {};
  } catch {
    return {};
  }
}

/** What a class view asks for first: its first rows and its count. */
export function startClassLoad(appId: string, cls: string, search: URLSearchParams): void {
  const whereText = search.get('where') ?? '';
  const where = parseWhere(whereText);
  startFirstPage(appId, cls, where, parseSort(search.get('sort')));
  startEarly(earlyKeys.count(appId, cls, whereText), () => dataApi.count(appId, cls, where));
}

/**
 * The open class's row count: asked once (or taken from the request started when the class was
 * opened), moved at once by live events and asked anew once they stop, and handed to the class
 * list so both show the same number.
 */
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useCallback, useEffect, useMemo, useRef } from 'react';
import type { SchemaDoc } from '../../../lib/wire.ts';
import { dataApi } from '../api/bff.ts';
import { earlyKeys, takeEarly } from '../api/early.ts';
import { dataBrowserKeys } from '../api/query-keys.ts';
import { viewAsApi } from '../api/viewas.ts';
import type { ClassUrl } from './use-class-url.ts';

/** After live events stop for this long, the count is asked anew (the events moved it at once). */
const RECOUNT_AFTER_MS = 2000;

export function useClassCount(appId: string, cls: string, url: ClassUrl) {
  const { where, whereText, asText, viewpoint, hasFilter } = url;
  const qc = useQueryClient();
  const countQueryKey = useMemo(
    () => dataBrowserKeys.count(appId, cls, whereText ?? '', asText),
    [appId, cls, whereText, asText],
  );
  const count = useQuery({
    queryKey: countQueryKey,
    queryFn: ({ signal }) =>
      viewpoint
        ? viewAsApi.count(appId, cls, viewpoint, where)
        : (takeEarly<{ count: number }>(earlyKeys.count(appId, cls, whereText ?? '')) ??
          dataApi.count(appId, cls, where, signal)),
    staleTime: 10_000,
    retry: false,
  });

  // The class list shows the count this view keeps for the whole class (exact, and current).
  const wholeCount = !hasFilter && !viewpoint ? count.data?.count : undefined;
  useEffect(() => {
    if (wholeCount === undefined) return;
    qc.setQueryData<{ results: SchemaDoc[] }>(dataBrowserKeys.schemas(appId), (list) => {
      const mine = list?.results.find((s) => s.className === cls);
      if (!list || !mine || (mine.count === wholeCount && mine.countExact !== false)) return list;
      return {
        ...list,
        results: list.results.map((s) =>
          s.className === cls ? { ...s, count: wholeCount, countExact: true } : s,
        ),
      };
    });
  }, [qc, appId, cls, wholeCount]);

  /** A live event moves the count at once; once they stop, the count is asked anew. */
  const recount = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => () => clearTimeout(recount.current), []);
  const moveCount = useCallback(
    (delta: number) => {
      qc.setQueryData<{ count: number }>(countQueryKey, (c) =>
        c ? { count: Math.max(0, c.count + delta) } : c,
      );
      clearTimeout(recount.current);
      recount.current = setTimeout(
        () => void qc.invalidateQueries({ queryKey: countQueryKey, exact: true }),
        RECOUNT_AFTER_MS,
      );
    },
    [qc, countQueryKey],
  );

  return { count, moveCount };
}

/**
 * Live mode: the bff's realtime stream (as master) for the open class patches the loaded rows and
 * the count while it is on. `status` says where the stream stands (connecting, live, or why not).
 */
import { useQueryClient } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import type { Where } from '../../../lib/filter.ts';
import { openStream } from '../../../lib/live-stream.ts';
import type { Row } from '../../../lib/wire.ts';
import { dataBrowserKeys } from '../api/query-keys.ts';
import type { RowPages } from './use-row-pages.ts';

export interface LiveModeInput {
  appId: string;
  cls: string;
  where: Where;
  /** Applies an event to the loaded rows (`RowPages.live`). */
  applyToRows: RowPages['live'];
  /** Moves the count by one event. */
  moveCount(delta: number): void;
  /** Rows the stream says were deleted. */
  rowsDeleted(ids: string[]): void;
}

export function useLiveMode({ appId, cls, where, applyToRows, moveCount, rowsDeleted }: LiveModeInput) {
  const qc = useQueryClient();
  const [on, setOn] = useState(false);
  const [status, setStatus] = useState('');
  // The stream is the subscription (app, class, filter); the handlers change with the page's
  // state (opening a row gives a new closeRow) and are read from here, so that such a change
  // does not close and reopen the stream, losing the events sent in between.
  const handlers = useRef({ applyToRows, moveCount, rowsDeleted, qc });
  handlers.current = { applyToRows, moveCount, rowsDeleted, qc };
  useEffect(() => {
    if (!on) return;
    setStatus('connecting…');
    return openStream(
      { appId, className: cls, where, viewpoint: 'master' },
      {
        onReady: () => setStatus('live'),
        onEvent: (e) => {
          if (e.kind === 'filtered' || !e.object) return;
          const { applyToRows, moveCount, rowsDeleted, qc } = handlers.current;
          const row = e.object as Row;
          applyToRows(e.kind, row);
          if (e.kind === 'create' || e.kind === 'enter') moveCount(1);
          if (e.kind === 'delete' || e.kind === 'leave') moveCount(-1);
          if (e.kind === 'delete') rowsDeleted([row.objectId]);
          if (e.kind === 'update')
            void qc.invalidateQueries({ queryKey: dataBrowserKeys.row(appId, cls, row.objectId) });
        },
        onFail: (error) => setStatus(error),
      },
    );
  }, [on, appId, cls, where]);
  return { on, setOn, status };
}

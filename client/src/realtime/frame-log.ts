/** Realtime frames in the client's log: one scrubbed entry per frame sent or received (method `WS`). */
import type { LogEntry } from '../options.ts';
import { FILTERED, scrub } from '../scrub.ts';

/** Connect-frame fields that hold a credential but are not among its secret keys (scrubbed as well). */
const FRAME_SECRETS = ['restAPIKey'];

/** The frame as it may be logged: docs/protocol.md#log-scrubbing, plus the REST key field. */
export function scrubFrame(frame: Record<string, unknown>): unknown {
  let out = frame;
  for (const key of FRAME_SECRETS) if (key in out) out = { ...out, [key]: FILTERED };
  return scrub(out);
}

/** Hands the logger one scrubbed entry for a frame of the connection at `url`. */
export function logFrame(
  logger: ((entry: LogEntry) => void) | undefined,
  url: string,
  direction: 'send' | 'receive',
  frame: Record<string, any>,
): void {
  if (!logger) return;
  const objectId = frame.object?.objectId;
  const entry: LogEntry = {
    method: 'WS',
    path: pathOf(url),
    realtime: direction,
    ...(typeof objectId === 'string' ? { objectId } : {}),
    ...(frame.op === 'error' && typeof frame.code === 'number' ? { code: frame.code } : {}),
    headers: {},
    ...(direction === 'send' ? { body: scrubFrame(frame) } : { response: scrubFrame(frame) }),
    durationMs: 0,
  };
  try {
    logger(entry);
  } catch {
    // A logger's failure is not the stream's.
  }
}

function pathOf(url: string): string {
  try {
    return new URL(url).pathname;
  } catch {
    return url;
  }
}

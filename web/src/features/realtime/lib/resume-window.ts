import { countText } from '../../../lib/plural.ts';
import type { ResumeWindow } from '../api/resume-window.ts';

/** A duration in words: whole hours, minutes or seconds when it is one, else milliseconds. */
export function durationText(ms: number): string {
  for (const [unit, size] of [
    ['hour', 3_600_000],
    ['minute', 60_000],
    ['second', 1_000],
  ] as const) {
    if (ms >= size && ms % size === 0) return countText(ms / size, unit);
  }
  return `${ms.toLocaleString()} ms`;
}

/** What the window keeps now: how many events, from the oldest to the newest (ids and ISO times). */
export function spanText(w: ResumeWindow): string {
  if (w.count === 0 || !w.oldest || !w.newest) return 'No event is kept now.';
  return `${countText(w.count, 'event')} kept, from ${w.oldest.eventId} (${w.oldest.at}) to ${w.newest.eventId} (${w.newest.at}).`;
}

/** The window's bounds (the options) and what a client past them sees. */
export function boundsText(w: ResumeWindow): string {
  return (
    `Events are kept for ${durationText(w.retentionMs)} (liveQuery.retentionMs), at most ` +
    `${countText(w.retentionMaxEvents, 'event')} (liveQuery.retentionMaxEvents). A client that resumes ` +
    'from an older event gets error 5 and subscribes again with a snapshot.'
  );
}

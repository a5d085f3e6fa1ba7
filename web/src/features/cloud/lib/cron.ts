import { Cron } from 'croner';
import cronstrue from 'cronstrue';

export interface CronPreview {
  ok: boolean;
  /** The expression in plain words, or why it is not valid. */
  words: string;
  /** The next runs (at most five), as instants. */
  next: Date[];
}

/**
 * A five-field cron expression in a zone: in plain words and its next five runs, none before
 * `startAt` (an instant) when given, as the service computes them (croner, the same options).
 */
export function previewCron(expression: string, timeZone: string, startAt?: Date): CronPreview {
  const cron = expression.trim();
  if (!cron)
    return { ok: false, words: 'Type five fields: minute hour day-of-month month day-of-week.', next: [] };
  try {
    const next = new Cron(cron, {
      mode: '5-part',
      timezone: timeZone || 'UTC',
      ...(startAt ? { startAt } : {}),
    }).nextRuns(5);
    const words = cronstrue.toString(cron, { use24HourTimeFormat: true, verbose: true });
    return { ok: true, words: `${words} (${timeZone || 'UTC'})`, next };
  } catch (err) {
    return { ok: false, words: (err as Error).message.replace(/^CronPattern: /, ''), next: [] };
  }
}

/** The console user's own time zone (the browser's). */
export const localZone = (): string => Intl.DateTimeFormat().resolvedOptions().timeZone;

export const formatLocal = (date: Date | string): string =>
  new Date(date).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });

/** An instant as the wall clock of `timeZone` reads it, with the zone's offset: "Mar 1, 2027, 9:30 AM GMT+1". */
export const formatInZone = (date: Date | string, timeZone: string): string =>
  new Date(date).toLocaleString(undefined, {
    timeZone,
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    hour: 'numeric',
    minute: '2-digit',
    timeZoneName: 'short',
  });

/**
 * A `datetime-local` value (`YYYY-MM-DDTHH:mm`) read as the wall clock of `timeZone`: the instant,
 * or null when either is not valid. (croner reads a date string in its zone; in a gap of a clock
 * change, the time after it.)
 */
export function instantIn(local: string, timeZone: string): Date | null {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.test(local)) return null;
  try {
    return new Cron(local, { timezone: timeZone || 'UTC' }).nextRun(new Date(0));
  } catch {
    return null;
  }
}

/** An instant as a `datetime-local` value on the wall clock of `timeZone`. */
export function wallClockIn(date: Date | string, timeZone: string): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone: timeZone || 'UTC',
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
    })
      .formatToParts(new Date(date))
      .map((p) => [p.type, p.value]),
  );
  return `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}`;
}

import { Cron } from 'croner';
import cronstrue from 'cronstrue';

export interface CronPreview {
  ok: boolean;
  /** The expression in plain words, or why it is not valid. */
  words: string;
  /** The next runs (at most five), as instants. */
  next: Date[];
}

/** A five-field cron expression in a zone: in plain words and its next five runs. */
export function previewCron(expression: string, timeZone: string): CronPreview {
  const cron = expression.trim();
  if (!cron)
    return { ok: false, words: 'Type five fields: minute hour day-of-month month day-of-week.', next: [] };
  try {
    const next = new Cron(cron, { mode: '5-part', timezone: timeZone || 'UTC' }).nextRuns(5);
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

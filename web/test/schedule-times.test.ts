import { describe, expect, it } from 'vitest';
import { formatInZone, instantIn, previewCron, wallClockIn } from '../src/features/cloud/lib/cron.ts';

describe('schedule times in the schedule’s own zone', () => {
  it('reads a start date on the zone’s wall clock, and back', () => {
    expect(instantIn('2027-03-01T09:00', 'Europe/Paris')?.toISOString()).toBe('2027-03-01T08:00:00.000Z');
    expect(instantIn('2027-07-01T09:00', 'Europe/Paris')?.toISOString()).toBe('2027-07-01T07:00:00.000Z');
    expect(instantIn('2027-03-01T09:00', 'Asia/Tokyo')?.toISOString()).toBe('2027-03-01T00:00:00.000Z');
    expect(wallClockIn('2027-07-01T07:00:00.000Z', 'Europe/Paris')).toBe('2027-07-01T09:00');
    expect(wallClockIn('2027-03-01T00:00:00.000Z', 'UTC')).toBe('2027-03-01T00:00');
    expect(instantIn('', 'UTC')).toBeNull();
    expect(instantIn('2027-03-01T09:00', 'Mars/Olympus')).toBeNull();
  });

  it('the next five runs start at the start date and follow the zone’s clock change', () => {
    const start = instantIn('2027-03-01T09:00', 'Europe/Paris')!;
    const { ok, next } = previewCron('30 9 * * 1', 'Europe/Paris', start);
    expect(ok).toBe(true);
    // Paris moves to summer time on 2027-03-28: 09:30 there is 08:30 UTC, then 07:30 UTC.
    expect(next.map((d) => d.toISOString())).toEqual([
      '2027-03-01T08:30:00.000Z',
      '2027-03-08T08:30:00.000Z',
      '2027-03-15T08:30:00.000Z',
      '2027-03-22T08:30:00.000Z',
      '2027-03-29T07:30:00.000Z',
    ]);
    expect(formatInZone(next[4]!, 'Europe/Paris')).toMatch(/9:30/);
  });
});

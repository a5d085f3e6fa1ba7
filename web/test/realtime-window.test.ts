import { describe, expect, it } from 'vitest';
import type { ResumeWindow } from '../src/features/realtime/api/resume-window.ts';
import { boundsText, durationText, spanText } from '../src/features/realtime/lib/resume-window.ts';

const window: ResumeWindow = {
  retentionMs: 300_000,
  retentionMaxEvents: 10_000,
  count: 2,
  oldest: { eventId: '0mi1abcde-000000000004', at: '2026-11-29T15:00:00.000Z' },
  newest: { eventId: '0mi1abcde-000000000005', at: '2026-11-29T15:00:01.500Z' },
};

describe('the realtime resume window, in words', () => {
  it('says the span: how many events, from the oldest to the newest', () => {
    expect(spanText(window)).toBe(
      '2 events kept, from 0mi1abcde-000000000004 (2026-11-29T15:00:00.000Z) to 0mi1abcde-000000000005 (2026-11-29T15:00:01.500Z).',
    );
    expect(spanText({ ...window, count: 1, oldest: window.newest })).toBe(
      '1 event kept, from 0mi1abcde-000000000005 (2026-11-29T15:00:01.500Z) to 0mi1abcde-000000000005 (2026-11-29T15:00:01.500Z).',
    );
    expect(spanText({ ...window, count: 0, oldest: null, newest: null })).toBe('No event is kept now.');
  });

  it('says the bounds and what a client past them sees', () => {
    expect(boundsText(window)).toBe(
      'Events are kept for 5 minutes (liveQuery.retentionMs), at most 10,000 events (liveQuery.retentionMaxEvents). A client that resumes from an older event gets error 5 and subscribes again with a snapshot.',
    );
    expect(durationText(3_600_000)).toBe('1 hour');
    expect(durationText(90_000)).toBe('90 seconds');
    expect(durationText(1_500)).toBe('1,500 ms');
    expect(durationText(0)).toBe('0 ms');
  });
});

import type { LogLine } from '@bds/client/protocol';
import { describe, expect, it } from 'vitest';
import { filtersOf, isoOfLocal, lineText, localOfIso } from '../src/features/logs/lib/filters.ts';

const request: LogLine = {
  id: 'a-1',
  at: '2026-01-01T00:00:00.000Z',
  requestId: 'r1',
  kind: 'request',
  method: 'GET',
  path: '/classes/Game/x',
  status: 404,
  code: 101,
  ms: 3.5,
  caller: 'anonymous',
};

describe('the Logs page: filters and lines', () => {
  it("reads the filters from the URL, the service's names only, empty ones left out", () => {
    const params = new URLSearchParams({ status: '4xx', requestId: 'abc', className: '', color: 'red' });
    expect(filtersOf(params)).toEqual({ status: '4xx', requestId: 'abc' });
  });

  it('turns a datetime-local value into the ISO instant and back (local time, minutes)', () => {
    const local = '2026-03-04T05:06';
    const iso = isoOfLocal(local);
    expect(new Date(iso).getTime()).toBe(new Date(local).getTime());
    expect(localOfIso(iso)).toBe(local);
    expect(isoOfLocal('')).toBe('');
    expect(localOfIso('not a date')).toBe('');
  });

  it('writes a request line as method, path, status, code and time; other lines as their text', () => {
    expect(lineText(request)).toBe('GET /classes/Game/x → 404 (code 101) in 3.5 ms');
    expect(lineText({ ...request, status: 200, code: undefined })).toBe(
      'GET /classes/Game/x → 200 in 3.5 ms',
    );
    expect(
      lineText({ id: 'a-2', at: request.at, requestId: 'r1', kind: 'cloud', level: 'info', text: 'hi' }),
    ).toBe('hi');
  });
});

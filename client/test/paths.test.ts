import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { normalPath, pathSegments } from '../src/protocol/paths.ts';

describe('the normal form of a path', () => {
  it.each([
    ['/login', '/login'],
    ['/login/', '/login'],
    ['//login', '/login'],
    ['/login//', '/login'],
    ['/classes//_User', '/classes/_User'],
    ['/%6Cogin', '/login'],
    ['/classes/%5FUser/', '/classes/_User'],
    ['/files/a%2Fb', '/files/a%2Fb'],
    ['/files/a%252Fb', '/files/a%252Fb'],
    ['/files/a%3Fb', '/files/a%3Fb'],
    ['/', '/'],
    ['', '/'],
    ['///', '/'],
    ['users', '/users'],
  ])('%s is %s', (raw, normal) => {
    expect(normalPath(raw)).toBe(normal);
  });

  it('answers undefined for a malformed escape', () => {
    expect(normalPath('/classes/%E0%A4%A')).toBeUndefined();
    expect(pathSegments('/a/%zz')).toBeUndefined();
  });

  it('is idempotent and keeps the decoded segments', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'binary' }), { maxLength: 6 }), (segments) => {
        const raw = `/${segments.map(encodeURIComponent).join('/')}`;
        const normal = normalPath(raw)!;
        expect(normalPath(normal)).toBe(normal);
        expect(pathSegments(normal)).toEqual(segments.filter((s) => s !== ''));
      }),
      { numRuns: 2000 },
    );
  });
});

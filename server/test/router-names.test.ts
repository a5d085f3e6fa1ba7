import { describe, expect, it } from 'vitest';
import { Router } from '../src/http/router.ts';
import { BdsError } from '../src/kernel/errors.ts';
import { classNameProblem } from '../src/kernel/names.ts';

describe('path parameters', () => {
  const router = new Router().add('GET', '/classes/:className/:objectId', async (req) => ({
    body: req.params,
  }));

  it('are decoded when they hold %-escapes and kept as they are otherwise', () => {
    expect(router.match('GET', '/classes/Post/a%2Fb%20c')?.params).toEqual({
      className: 'Post',
      objectId: 'a/b c',
    });
    expect(router.match('GET', '/classes/Post/abc')?.params).toEqual({ className: 'Post', objectId: 'abc' });
  });

  it('refuse a malformed escape with 400, code 107 and the segment', () => {
    let caught: unknown;
    try {
      router.match('GET', '/classes/Post/%E0%A4%A');
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(BdsError);
    const e = caught as BdsError;
    expect([e.httpStatus, e.code, e.message]).toEqual([400, 107, 'Malformed path segment: %E0%A4%A']);
  });
});

describe('class names found good are remembered, bad ones never', () => {
  it('answers the same for a name however often it is asked, past the bound of remembered names', () => {
    const reserved = 'The name _SCHEMA is reserved.';
    const badPattern = 'Class names start with a letter and hold only letters, digits and _.';
    for (let round = 0; round < 2; round++) {
      expect(classNameProblem('Post')).toBe(undefined);
      expect(classNameProblem('_User')).toBe(undefined);
      expect(classNameProblem('_SCHEMA')).toBe(reserved);
      expect(classNameProblem('pg_catalog')).toBe('The name pg_catalog is reserved.');
      expect(classNameProblem('bad-name')).toBe(badPattern);
      expect(classNameProblem('constructor')).toBe('The name constructor is reserved.');
      // More good names than are remembered: the set starts over, answers stay the same.
      for (let i = 0; i < 1500; i++) expect(classNameProblem(`Class${i}`)).toBe(undefined);
    }
  });
});

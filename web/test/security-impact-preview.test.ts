import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { ImpactSummary } from '../src/components/impact-preview.tsx';
import { asWireAcl } from '../src/features/data-browser/components/acl-change-review.tsx';
import { dangerousSettings, ruleWords } from '../src/features/security/access/clp.ts';
import type { Impact, OperationRule } from '../src/lib/security-api.ts';

const text = (impact: Impact, props: { rolesOnly?: boolean; everyClass?: boolean } = {}) =>
  renderToStaticMarkup(createElement(ImpactSummary, { impact, ...props }))
    .replace(/<[^>]+>/g, '')
    .replace(/&#x27;/g, "'");

const none = { gain: 0, lose: 0, gainSample: [], loseSample: [] };
const ann = { objectId: 'u1', username: 'ann' };
const bob = { objectId: 'u2', username: 'bob' };
const op = (operation: string, extra: Record<string, unknown> = {}) => ({
  operation,
  ...none,
  anonymous: 'same',
  ...extra,
});
const ops = (...changed: ReturnType<typeof op>[]) =>
  ['find', 'get', 'count', 'create', 'update', 'delete', 'addField'].map(
    (name) => changed.find((c) => c.operation === name) ?? op(name),
  ) as Impact['operations'];

const base: Impact = {
  users: { total: 2, considered: 2, sampled: false, bound: null },
  anonymous: { read: 'loses', write: 'same' },
  read: { gain: 0, lose: 2, gainSample: [], loseSample: [ann, bob] },
  write: none,
  operations: ops(op('find', { lose: 2, loseSample: [ann, bob], anonymous: 'loses' })),
  fields: [],
};

describe('the impact summary, per operation', () => {
  it('names the operation that changes, the users and anonymous callers', () => {
    const t = text(base);
    expect(t).toContain('find: 2 users lose it (ann, bob); anonymous callers lose it');
    expect(t).toContain(
      'Anonymous callers (application keys only) lose read access and keep the same write access.',
    );
    expect(t).not.toContain('get:');
  });

  it('says when nothing changes, and words gaining and losing at once', () => {
    expect(text({ ...base, operations: ops() })).toContain(
      'No operation changes for any user or for anonymous callers.',
    );
    const both = text({
      ...base,
      anonymous: { read: 'both', write: 'same' },
      operations: ops(
        op('get', { gain: 1, gainSample: [ann], lose: 1, loseSample: [bob], anonymous: 'both' }),
      ),
    });
    expect(both).toContain(
      'get: 1 user gains it (ann); 1 user loses it (bob); anonymous callers gain and lose it',
    );
    expect(both).toContain('Anonymous callers (application keys only) gain and lose read access');
  });

  it('a draft of role changes: the users whose roles change, one section per class', () => {
    const t = text(
      {
        ...base,
        users: { total: 9, considered: 1, sampled: false, bound: null },
        classes: [
          {
            className: 'Post',
            anonymous: { read: 'same', write: 'same' },
            read: none,
            write: { gain: 1, lose: 0, gainSample: [bob], loseSample: [] },
            operations: ops(op('update', { gain: 1, gainSample: [bob] })),
            fields: [],
          },
        ],
      },
      { rolesOnly: true, everyClass: true },
    );
    expect(t).toContain('Computed for the 1 user whose roles change, of 9 users.');
    expect(t).toContain('On Post');
    expect(t).toContain('update: 1 user gains it (bob)');
  });

  it('field visibility names anonymous callers too', () => {
    const t = text({
      ...base,
      fields: [
        {
          field: 'city',
          visibleTo: 0,
          hiddenFrom: 2,
          visibleToSample: [],
          hiddenFromSample: [ann, bob],
          anonymous: 'loses',
        },
      ],
    });
    expect(t).toContain('city: becomes hidden from 2 users (ann, bob)');
    expect(t).toContain('Anonymous callers stop seeing city.');
  });
});

describe('fixed rules of built-in classes', () => {
  const masterOnly = {
    allowed: false,
    decidedBy: 'system',
    rule: 'system.masterOnly',
    reason: 'delete on _Installation is master-only',
    code: 119,
    message: 'unauthorized: master key is required',
  };
  const rule = (over: Partial<OperationRule> = {}): OperationRule => ({
    operation: 'delete',
    fixed: true,
    builtIn: { rule: 'system.masterOnly', reason: 'delete on _Installation is master-only' },
    anonymous: masterOnly,
    signedIn: masterOnly,
    ...over,
  });

  it('words the rule the service applies', () => {
    expect(ruleWords(rule())).toBe('master key only');
    const own = {
      allowed: true,
      decidedBy: 'system',
      rule: 'system.session',
      reason: 'own',
      onSomeRows: true,
    };
    const refused = {
      ...masterOnly,
      code: 209,
      message: 'Session token required: send X-Backend-Session-Token.',
    };
    expect(ruleWords(rule({ anonymous: refused, signedIn: own }))).toBe(
      'anonymous callers: refused (Session token required: send X-Backend-Session-Token., code 209); signed-in users: allowed on the rows the rule names',
    );
    const open = { allowed: true, decidedBy: 'clp', rule: 'clp.public', reason: 'public' };
    expect(ruleWords(rule({ anonymous: open, signedIn: open }))).toBe('allowed for everyone');
  });

  it('no warning about an operation the CLP does not decide', () => {
    const clp = { find: { '*': true }, create: {}, update: {}, delete: { '*': true }, addField: {} };
    const ids = (fixed?: Set<string>) => dangerousSettings('_Installation', clp, [], fixed).map((w) => w.id);
    expect(ids()).toEqual(['public-delete']);
    expect(ids(new Set(['find', 'delete']))).toEqual([]);
  });
});

describe('an ACL typed as JSON', () => {
  it('is previewed only when it is an ACL as the wire carries it', () => {
    expect(asWireAcl({ '*': { read: true }, 'role:A': { read: true, write: false } })).toEqual({
      '*': { read: true },
      'role:A': { read: true, write: false },
    });
    expect(asWireAcl({})).toEqual({});
    for (const bad of [
      null,
      [],
      'x',
      { '*': true },
      { '*': { read: 'yes' } },
      { '*': { read: true, own: true } },
    ])
      expect(asWireAcl(bad), JSON.stringify(bad)).toBeNull();
  });
});

import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { ImpactSummary } from '../src/components/impact-preview.tsx';
import type { Impact } from '../src/lib/security-api.ts';

const text = (impact: Impact) =>
  renderToStaticMarkup(createElement(ImpactSummary, { impact }))
    .replace(/<[^>]+>/g, '')
    .replace(/&#x27;/g, "'");

const none = { gain: 0, lose: 0, gainSample: [], loseSample: [] };
const base: Impact = {
  users: { total: 5, considered: 5, sampled: false, bound: null },
  anonymous: { read: 'same', write: 'loses' },
  read: { gain: 1, lose: 0, gainSample: [{ objectId: 'u1', username: 'ann' }], loseSample: [] },
  write: none,
  fields: [],
};

describe('the impact summary', () => {
  it('states exact counts with sample names and the anonymous verdict', () => {
    const t = text(base);
    expect(t).toContain('Computed for all 5 users.');
    expect(t).toContain('1 user gains read access (ann)');
    expect(t).toContain('0 users lose write access');
    expect(t).toContain(
      'Anonymous callers (application keys only) keep the same read access and lose write access.',
    );
    expect(t).not.toContain('margin');
  });

  it('states the sample and its bound when the service sampled', () => {
    const t = text({
      ...base,
      users: { total: 25_000, considered: 10_000, sampled: true, bound: 312 },
      read: { gain: 2500, lose: 0, gainSample: [{ objectId: 'u1', username: 'ann' }], loseSample: [] },
    });
    expect(t).toContain(
      'Estimated from a uniform sample of 10000 of 25000 users (counts are scaled; 95% margin ±312).',
    );
    expect(t).toContain('2500 users gain read access (ann, …)');
  });

  it('lists only the fields whose visibility changes', () => {
    const t = text({
      ...base,
      fields: [
        {
          field: 'email',
          visibleTo: 0,
          hiddenFrom: 2,
          hiddenFromSample: [{ objectId: 'a', username: 'nia' }],
        },
        { field: 'title', visibleTo: 0, hiddenFrom: 0 },
        { field: 'phone', visibleTo: 3, hiddenFrom: 0 },
      ],
    });
    expect(t).toContain('email: becomes hidden from 2 users (nia)');
    expect(t).toContain('phone: becomes visible to 3 users');
    expect(t).not.toContain('title:');
  });
});

import { DEVICE_TYPES } from '@bds/client/protocol';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { InstallationsTable } from '../src/components/installations-table.tsx';
import { type InstallationRow, installationsKey } from '../src/hooks/use-installations.ts';

/** The table as the first render shows it, with `rows` already answered by the bff (or still loading). */
function render(rows?: InstallationRow[], count = rows?.length ?? 0): string {
  const client = new QueryClient();
  if (rows) {
    client.setQueryData(installationsKey('app', { deviceType: '', channel: '', username: '' }), {
      results: rows,
      count,
    });
  }
  return renderToStaticMarkup(
    createElement(QueryClientProvider, { client }, createElement(InstallationsTable, { appId: 'app' })),
  );
}
const text = (html: string) => html.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ');

const ann: InstallationRow = {
  objectId: 'i1',
  installationId: 'inst-ios-ann',
  deviceType: 'ios',
  deviceToken: 'tok-ios-…',
  channels: ['news', 'sports'],
  badge: 3,
  createdAt: '2026-04-01T08:00:00.000Z',
  user: { objectId: 'u1', username: 'ann' },
};

describe('the one installations table (Push and Security)', () => {
  it('offers exactly the device types the service delivers pushes to', () => {
    const options = [...render().matchAll(/<option value="([^"]*)"/g)].map((m) => m[1]);
    expect(options).toEqual(['', ...DEVICE_TYPES]);
  });

  it('filters by device type, channel and user, and says it is loading', () => {
    const html = render();
    for (const label of ['Device type', 'Channel', 'User']) expect(html).toContain(`aria-label="${label}"`);
    expect(text(html)).toContain('Loading installations…');
  });

  it('shows each installation with its owner, channels, masked token and badge', () => {
    const html = render([ann, { objectId: 'i2', createdAt: '2026-04-02T08:00:00.000Z', user: null }]);
    expect(text(html)).toContain('Installation Device User Channels Push token Badge Created');
    expect(html).toContain('data-installation="inst-ios-ann"');
    expect(text(html)).toContain('inst-ios-ann ios ann news, sports tok-ios-… 3');
    expect(text(html)).toContain('2 installations');
  });

  it('says when only the newest are shown', () => {
    expect(text(render([ann], 450))).toContain('450 installations (the newest 1 shown: filter to narrow)');
    expect(text(render([ann]))).toContain('1 installation ');
  });
});

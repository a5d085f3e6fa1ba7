import { useState } from 'react';
import { useParams } from 'react-router';
import { QueryState } from '../../components/query-state.tsx';
import { Input } from '../../components/ui/input.tsx';
import { useCanWrite } from '../../lib/session.ts';
import { type AuthProvider, type OptionGroup, useServerOptions } from './api/server-options.ts';
import { OptionsTable } from './components/options-table.tsx';
import { ParseImport } from './components/parse-import.tsx';
import { type IdTokenConfig, ProvidersTable } from './components/providers-table.tsx';
import { filterGroups, filterProviders } from './lib/options.ts';

/** /apps/:appId/server: the service's effective options, grouped, read only. */
export default function ServerRoute() {
  const { appId = '' } = useParams();
  const options = useServerOptions(appId);
  const [filter, setFilter] = useState('');
  const canWrite = useCanWrite();

  return (
    <div className="mx-auto max-w-6xl p-6">
      <h1 className="text-xl font-semibold">Server</h1>
      <p className="mt-1 mb-4 text-sm text-slate-500 dark:text-slate-400">
        The options the service runs with, as set in its config file or environment (read only here). Keys and
        credentials show only whether they are set.
      </p>
      <QueryState query={options} loading="Loading the options…" failed="Could not load the options">
        {({ groups, authProviders }) => (
          <ServerOptionsView
            groups={filterGroups(groups, filter)}
            allGroups={groups}
            providers={filterProviders(authProviders, filter)}
            filter={filter}
            onFilter={setFilter}
          />
        )}
      </QueryState>
      <ParseImport appId={appId} canWrite={canWrite} />
    </div>
  );
}

/** The filter, links to the groups, then each group's table (the sign-in providers with the accounts). */
function ServerOptionsView({
  groups,
  allGroups,
  providers,
  filter,
  onFilter,
}: {
  /** The groups and rows the filter leaves. */
  groups: OptionGroup[];
  allGroups: OptionGroup[];
  providers: AuthProvider[];
  filter: string;
  onFilter(text: string): void;
}) {
  const auth = allGroups.flatMap((g) => g.options).find((r) => r.name === 'auth')?.value as
    | Record<string, IdTokenConfig>
    | undefined;
  const rowsOf = new Map(groups.map((g) => [g.name, g.options]));
  const visible = allGroups.filter(
    (g) => rowsOf.has(g.name) || (g.name === 'accounts' && providers.length > 0),
  );

  return (
    <>
      <div className="mb-4 flex flex-wrap items-center gap-3">
        <Input
          type="search"
          aria-label="Filter options"
          placeholder="Filter by name or description"
          value={filter}
          onChange={(e) => onFilter(e.target.value)}
          className="w-72"
        />
        <nav aria-label="Option groups" className="flex flex-wrap gap-x-3 gap-y-1 text-sm">
          {visible.map((g) => (
            <a
              key={g.name}
              href={`#options-${g.name}`}
              className="text-indigo-700 hover:underline dark:text-indigo-300"
            >
              {g.title}
            </a>
          ))}
        </nav>
      </div>
      {visible.length === 0 && <p className="text-sm text-slate-500">No option matches “{filter}”.</p>}
      <div className="space-y-8">
        {visible.map((g) => {
          const rows = rowsOf.get(g.name) ?? [];
          return (
            <section key={g.name} aria-labelledby={`options-${g.name}`}>
              <h2 id={`options-${g.name}`} className="mb-2 scroll-mt-4 text-base font-semibold">
                {g.title}
              </h2>
              {g.name === 'accounts' && providers.length > 0 && (
                <div className="mb-3">
                  <h3 className="mb-1 text-sm font-medium text-slate-600 dark:text-slate-300">
                    Sign-in providers
                  </h3>
                  <ProvidersTable providers={providers} auth={auth} />
                </div>
              )}
              {rows.length > 0 && <OptionsTable rows={rows} label={`${g.title} options`} />}
            </section>
          );
        })}
      </div>
    </>
  );
}

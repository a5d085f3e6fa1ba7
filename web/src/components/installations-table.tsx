/**
 * The installations, newest first, filtered by device type, channel and owner; push tokens
 * masked. One view, shown by the Push section and by Security's Installations tab.
 */
import { DEVICE_TYPES } from '@bds/client/protocol';
import { useDeferredValue, useState } from 'react';
import { type InstallationFilter, useInstallations } from '../hooks/use-installations.ts';
import { QueryState } from './query-state.tsx';
import { Input, Select } from './ui/input.tsx';

export function InstallationsTable({ appId }: { appId: string }) {
  const [filter, setFilter] = useState<InstallationFilter>({ deviceType: '', channel: '', username: '' });
  const deferred = useDeferredValue(filter);
  const list = useInstallations(appId, {
    deviceType: deferred.deviceType,
    channel: deferred.channel.trim(),
    username: deferred.username.trim(),
  });
  return (
    <div className="space-y-2">
      <div className="flex flex-wrap gap-2">
        <Select
          aria-label="Device type"
          value={filter.deviceType}
          onChange={(e) => setFilter({ ...filter, deviceType: e.target.value })}
        >
          <option value="">All device types</option>
          {DEVICE_TYPES.map((t) => (
            <option key={t} value={t}>
              {t}
            </option>
          ))}
        </Select>
        <Input
          aria-label="Channel"
          placeholder="Channel"
          value={filter.channel}
          onChange={(e) => setFilter({ ...filter, channel: e.target.value })}
        />
        <Input
          aria-label="User"
          placeholder="Username"
          value={filter.username}
          onChange={(e) => setFilter({ ...filter, username: e.target.value })}
        />
      </div>
      <QueryState query={list} loading="Loading installations…" failed="Could not load the installations">
        {({ results, count }) => (
          <>
            <p className="text-sm text-slate-500" data-testid="installations-count">
              {count} {count === 1 ? 'installation' : 'installations'}
              {count > results.length && ` (the newest ${results.length} shown: filter to narrow)`}
            </p>
            <table className="w-full text-left text-sm">
              <thead className="text-slate-500">
                <tr>
                  <th className="py-1">Installation</th>
                  <th>Device</th>
                  <th>User</th>
                  <th>Channels</th>
                  <th>Push token</th>
                  <th>Badge</th>
                  <th>Created</th>
                </tr>
              </thead>
              <tbody>
                {results.map((i) => (
                  <tr
                    key={i.objectId}
                    data-testid="installation-row"
                    data-installation={i.installationId}
                    className="border-t border-slate-100 dark:border-slate-800"
                  >
                    <td className="py-1 font-mono text-xs">{i.installationId ?? '—'}</td>
                    <td>{i.deviceType ?? '—'}</td>
                    <td>{i.user?.username ?? i.user?.objectId ?? '—'}</td>
                    <td>{(i.channels ?? []).join(', ') || '—'}</td>
                    <td className="font-mono text-xs">{i.deviceToken ?? '—'}</td>
                    <td className="tabular-nums">{i.badge ?? ''}</td>
                    <td>{new Date(i.createdAt).toLocaleString()}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </>
        )}
      </QueryState>
    </div>
  );
}

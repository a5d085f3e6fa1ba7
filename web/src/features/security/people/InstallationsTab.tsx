import { useDeferredValue, useState } from 'react';
import { Input, Select } from '../../../components/ui/input.tsx';
import { Spinner } from '../../../components/ui/spinner.tsx';
import { type InstallationFilter, useInstallations } from './api.ts';

const DEVICE_TYPES = ['ios', 'android', 'osx', 'tvos', 'web', 'win', 'embedded'];

/** Installations, newest first, filtered by device type, channel and owner; push tokens masked. */
export function InstallationsTab({ appId }: { appId: string }) {
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
      {list.isPending ? (
        <Spinner label="Loading installations…" />
      ) : list.isError ? (
        <p role="alert" className="text-sm text-red-600">
          Could not load the installations: {list.error.message}
        </p>
      ) : (
        <>
          <p className="text-sm text-slate-500" data-testid="installations-count">
            {list.data.count} {list.data.count === 1 ? 'installation' : 'installations'}
            {list.data.count > list.data.results.length &&
              ` (the newest ${list.data.results.length} shown: filter to narrow)`}
          </p>
          <table className="w-full text-left text-sm">
            <thead className="text-slate-500">
              <tr>
                <th className="py-1">Installation</th>
                <th>Device</th>
                <th>User</th>
                <th>Channels</th>
                <th>Push token</th>
                <th>Created</th>
              </tr>
            </thead>
            <tbody>
              {list.data.results.map((i) => (
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
                  <td>{new Date(i.createdAt).toLocaleString()}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </div>
  );
}

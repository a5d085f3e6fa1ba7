import { useState } from 'react';
import { Input, Select } from '../../../components/ui/input.tsx';
import { Spinner } from '../../../components/ui/spinner.tsx';
import { useInstallations } from '../api/push.ts';

const DEVICE_TYPES = ['ios', 'android', 'osx', 'tvos', 'web'];

/** Installations, newest first, filtered by device type and channel. */
export function Installations({ appId }: { appId: string }) {
  const [deviceType, setDeviceType] = useState('');
  const [channel, setChannel] = useState('');
  const list = useInstallations(appId, { deviceType, channel: channel.trim() });
  return (
    <section aria-label="Installations" className="space-y-2">
      <h2 className="text-base font-semibold">Installations</h2>
      <div className="flex gap-2">
        <Select aria-label="Device type" value={deviceType} onChange={(e) => setDeviceType(e.target.value)}>
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
          value={channel}
          onChange={(e) => setChannel(e.target.value)}
        />
      </div>
      {list.isPending ? (
        <Spinner label="Loading installations…" />
      ) : list.isError ? (
        <p role="alert" className="text-sm text-red-600">
          Could not load installations: {list.error.message}
        </p>
      ) : (
        <>
          <p className="text-sm text-slate-500" data-testid="installations-count">
            {list.data.count} {list.data.count === 1 ? 'installation' : 'installations'}
          </p>
          <table className="w-full text-left text-sm">
            <thead className="text-slate-500">
              <tr>
                <th className="py-1">Installation</th>
                <th>Device</th>
                <th>Token</th>
                <th>Channels</th>
                <th>Badge</th>
              </tr>
            </thead>
            <tbody>
              {list.data.results.map((i) => (
                <tr
                  key={i.objectId}
                  data-testid="installation-row"
                  className="border-t border-slate-100 dark:border-slate-800"
                >
                  <td className="py-1 font-mono text-xs">{i.installationId}</td>
                  <td>{i.deviceType}</td>
                  <td className="font-mono text-xs">{i.deviceToken ?? '—'}</td>
                  <td>{(i.channels ?? []).join(', ')}</td>
                  <td className="tabular-nums">{i.badge ?? ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </section>
  );
}

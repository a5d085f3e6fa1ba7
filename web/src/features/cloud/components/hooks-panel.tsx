import { useState } from 'react';
import { QueryState } from '../../../components/query-state.tsx';
import { Button } from '../../../components/ui/button.tsx';
import { Input, Select } from '../../../components/ui/input.tsx';
import type { CloudCode } from '../../../hooks/use-cloud-code.ts';
import { isApiError } from '../../../lib/api.ts';
import { useChangeHook, useDeliveries } from '../api/cloud.ts';
import { formatLocal } from '../lib/cron.ts';

const TRIGGERS = ['beforeSave', 'afterSave', 'beforeDelete', 'afterDelete'];

/** An error as the service said it: its code and text. */
const said = (err: unknown) => (isApiError(err) ? `${err.error} (code ${err.code})` : (err as Error).message);

function HookRow({
  appId,
  label,
  path,
  url,
  canWrite,
}: {
  appId: string;
  label: string;
  path: string;
  url: string;
  canWrite: boolean;
}) {
  const [value, setValue] = useState(url);
  const change = useChangeHook(appId);
  return (
    <li className="flex flex-wrap items-center gap-2 py-1" data-testid={`hook-${label}`}>
      <span className="w-56 font-mono">{label}</span>
      <Input
        aria-label={`URL of ${label}`}
        className="flex-1"
        value={value}
        onChange={(e) => setValue(e.target.value)}
        disabled={!canWrite}
      />
      {canWrite && (
        <>
          <Button
            size="sm"
            disabled={value === url}
            onClick={() => change.mutate({ action: 'update', path, url: value })}
          >
            Save URL
          </Button>
          <Button size="sm" variant="danger" onClick={() => change.mutate({ action: 'delete', path })}>
            Delete
          </Button>
        </>
      )}
      {change.error && (
        <span role="alert" className="w-full text-red-600">
          {said(change.error)}
        </span>
      )}
    </li>
  );
}

function RegisterHook({ appId }: { appId: string }) {
  const [kind, setKind] = useState<'function' | 'trigger'>('trigger');
  const [functionName, setFunctionName] = useState('');
  const [className, setClassName] = useState('');
  const [triggerName, setTriggerName] = useState('afterSave');
  const [url, setUrl] = useState('https://');
  const change = useChangeHook(appId);
  return (
    <form
      className="flex flex-wrap items-end gap-3 text-sm"
      aria-label="Register a hook"
      onSubmit={(e) => {
        e.preventDefault();
        change.mutate(
          kind === 'function'
            ? { action: 'create', kind, functionName, url }
            : { action: 'create', kind, className, triggerName, url },
        );
      }}
    >
      <label>
        Hook type
        <Select
          aria-label="Hook type"
          className="ml-2"
          value={kind}
          onChange={(e) => setKind(e.target.value as 'function' | 'trigger')}
        >
          <option value="trigger">trigger</option>
          <option value="function">function</option>
        </Select>
      </label>
      {kind === 'function' ? (
        <label>
          Function name
          <Input
            aria-label="Function name"
            className="ml-2"
            value={functionName}
            onChange={(e) => setFunctionName(e.target.value)}
          />
        </label>
      ) : (
        <>
          <label>
            Class
            <Input
              aria-label="Class"
              className="ml-2 w-32"
              value={className}
              onChange={(e) => setClassName(e.target.value)}
            />
          </label>
          <label>
            Trigger
            <Select
              aria-label="Trigger"
              className="ml-2"
              value={triggerName}
              onChange={(e) => setTriggerName(e.target.value)}
            >
              {TRIGGERS.map((t) => (
                <option key={t}>{t}</option>
              ))}
            </Select>
          </label>
        </>
      )}
      <label className="flex-1">
        Receiver URL
        <Input
          aria-label="Receiver URL"
          className="ml-2 w-full"
          value={url}
          onChange={(e) => setUrl(e.target.value)}
        />
      </label>
      <Button type="submit" variant="primary" disabled={change.isPending}>
        Register hook
      </Button>
      {change.error && (
        <p role="alert" className="w-full text-red-600" data-testid="hook-error">
          {said(change.error)}
        </p>
      )}
      {change.isSuccess && <p className="w-full text-emerald-600">Registered.</p>}
    </form>
  );
}

function DeliveryLog({ appId }: { appId: string }) {
  const [filter, setFilter] = useState({ kind: '', status: '', hook: '' });
  const deliveries = useDeliveries(appId, filter);
  return (
    <section>
      <h2 className="mb-2 font-medium">Delivery log</h2>
      <div className="mb-2 flex flex-wrap gap-3 text-sm">
        <label>
          Kind
          <Select
            aria-label="Kind"
            className="ml-2"
            value={filter.kind}
            onChange={(e) => setFilter({ ...filter, kind: e.target.value })}
          >
            <option value="">any</option>
            <option value="trigger">trigger</option>
            <option value="function">function</option>
          </Select>
        </label>
        <label>
          Status
          <Select
            aria-label="Status"
            className="ml-2"
            value={filter.status}
            onChange={(e) => setFilter({ ...filter, status: e.target.value })}
          >
            <option value="">any</option>
            <option value="succeeded">succeeded</option>
            <option value="failed">failed</option>
            <option value="retrying">retrying</option>
          </Select>
        </label>
        <label>
          Hook
          <Input
            aria-label="Hook"
            className="ml-2"
            placeholder="Class.trigger or function"
            value={filter.hook}
            onChange={(e) => setFilter({ ...filter, hook: e.target.value })}
          />
        </label>
      </div>
      <QueryState
        query={deliveries}
        loading="Loading deliveries…"
        failed="Could not load deliveries"
        errorText={said}
        isEmpty={(d) => d.results.length === 0}
        empty={
          <p className="text-sm text-slate-500" data-testid="deliveries-empty">
            No deliveries match.
          </p>
        }
      >
        {({ results }) => (
          <table className="w-full text-left text-sm" data-testid="delivery-log">
            <thead className="text-xs text-slate-500 uppercase">
              <tr>
                <th className="py-1">When</th>
                <th>Hook</th>
                <th>Object</th>
                <th>Status</th>
                <th>HTTP</th>
                <th>Attempt</th>
                <th>Duration</th>
                <th>Error</th>
              </tr>
            </thead>
            <tbody>
              {results.map((d) => (
                <tr key={d.id} className="border-t border-slate-100 dark:border-slate-800">
                  <td className="py-1">{formatLocal(d.at)}</td>
                  <td className="font-mono">{d.hook}</td>
                  <td className="font-mono">{d.objectId ?? ''}</td>
                  <td>{d.status}</td>
                  <td>{d.httpStatus ?? ''}</td>
                  <td>{d.attempt}</td>
                  <td>{d.durationMs} ms</td>
                  <td className="text-red-600">{d.error ?? ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </QueryState>
    </section>
  );
}

/** Webhooks: list, register, change the URL, delete; the service's refusals; the delivery log. */
export function HooksPanel({ appId, code, canWrite }: { appId: string; code: CloudCode; canWrite: boolean }) {
  return (
    <div className="space-y-6 text-sm">
      {canWrite && <RegisterHook appId={appId} />}
      <section>
        <h2 className="mb-2 font-medium">Function hooks</h2>
        {code.webhookFunctions.length === 0 ? (
          <p className="text-slate-500">None.</p>
        ) : (
          <ul>
            {code.webhookFunctions.map((h) => (
              <HookRow
                key={`${h.functionName}:${h.url}`}
                appId={appId}
                label={h.functionName}
                path={`functions/${encodeURIComponent(h.functionName)}`}
                url={h.url}
                canWrite={canWrite}
              />
            ))}
          </ul>
        )}
      </section>
      <section>
        <h2 className="mb-2 font-medium">Trigger hooks</h2>
        {code.webhookTriggers.length === 0 ? (
          <p className="text-slate-500">None.</p>
        ) : (
          <ul>
            {code.webhookTriggers.map((h) => (
              <HookRow
                key={`${h.className}.${h.triggerName}:${h.url}`}
                appId={appId}
                label={`${h.className}.${h.triggerName}`}
                path={`triggers/${encodeURIComponent(h.className)}/${encodeURIComponent(h.triggerName)}`}
                url={h.url}
                canWrite={canWrite}
              />
            ))}
          </ul>
        )}
      </section>
      <DeliveryLog appId={appId} />
    </div>
  );
}

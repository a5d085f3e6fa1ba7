/** One realtime inspector: a viewpoint, a where, and the events the service sends it. */
import { useEffect, useRef, useState } from 'react';
import { FilterBuilder } from '../../../components/filter-builder.tsx';
import { type UserHit, UserPicker, userName } from '../../../components/user-picker.tsx';
import { type InspectorEvent, openStream, type Viewpoint } from '../../../lib/live-stream.ts';
import { columnsOf, type SchemaDoc } from '../../../lib/wire.ts';
import { fieldDiff, KINDS, keepEvents, REASONS } from '../lib/events.ts';

const input = 'rounded border px-1 py-0.5 text-sm dark:bg-gray-800';
const button = 'rounded border px-2 py-0.5 text-sm disabled:opacity-50';

const show = (v: unknown) => (v === undefined ? '—' : JSON.stringify(v));

function EventItem({ ev }: { ev: InspectorEvent }) {
  const time = new Date(ev.time).toLocaleTimeString();
  if (ev.kind === 'filtered') {
    return (
      <li data-kind="filtered" className="rounded border border-dashed border-amber-400 p-2 text-xs">
        <span className="font-semibold uppercase text-amber-700 dark:text-amber-400">filtered</span> {ev.op}{' '}
        <code>{ev.objectId}</code> <span className="text-slate-500">{time}</span>
        <p data-testid="filter-reason">
          Filtered by {ev.reason}: {REASONS[ev.reason ?? ''] ?? 'see the delivery trace'}
        </p>
      </li>
    );
  }
  const diff = ev.kind === 'update' ? fieldDiff(ev.original, ev.object) : [];
  return (
    <li data-kind={ev.kind} className="rounded border p-2 text-xs">
      <span className="font-semibold uppercase">{ev.kind}</span> <code>{ev.objectId}</code>{' '}
      <span className="text-slate-500">{time}</span>
      {ev.kind === 'update' ? (
        <table className="mt-1" aria-label="changes">
          <tbody>
            {diff.map((c) => (
              <tr key={c.field}>
                <th className="pr-2 text-left font-mono">{c.field}</th>
                <td className="font-mono text-red-700 line-through dark:text-red-400">{show(c.before)}</td>
                <td className="px-1">→</td>
                <td className="font-mono text-green-700 dark:text-green-400">{show(c.after)}</td>
              </tr>
            ))}
            {diff.length === 0 && (
              <tr>
                <td className="text-slate-500">no field changed</td>
              </tr>
            )}
          </tbody>
        </table>
      ) : (
        <pre className="mt-1 overflow-x-auto whitespace-pre-wrap font-mono">
          {JSON.stringify(ev.object, null, 1)}
        </pre>
      )}
    </li>
  );
}

export interface InspectorProps {
  appId: string;
  index: number;
  schema: SchemaDoc;
  initialViewpoint?: Viewpoint;
}

type Status =
  | { state: 'stopped' }
  | { state: 'opening' }
  | { state: 'live'; label: string }
  | { state: 'error'; error: string };

export function Inspector({ appId, index, schema, initialViewpoint = 'master' }: InspectorProps) {
  const className = schema.className;
  const [viewpoint, setViewpoint] = useState<Viewpoint>(initialViewpoint);
  const [user, setUser] = useState<UserHit | null>(null);
  const [where, setWhere] = useState<Record<string, unknown>>({});
  const [status, setStatus] = useState<Status>({ state: 'stopped' });
  // The kept events and how many fell off, in one state: its updates stay pure (React may run an
  // updater twice, and a count kept by a side effect inside one then counts twice).
  const [kept, setKept] = useState<{ events: InspectorEvent[]; dropped: number }>({ events: [], dropped: 0 });
  const { events, dropped } = kept;
  const [held, setHeld] = useState<InspectorEvent[]>([]);
  const [paused, setPaused] = useState(false);
  const [kind, setKind] = useState<string>('all');
  const [cap, setCap] = useState(200);
  const closeRef = useRef<(() => void) | null>(null);
  const seq = useRef(0);
  const pausedRef = useRef(paused);
  pausedRef.current = paused;
  const capRef = useRef(cap);
  capRef.current = cap;

  const add = (incoming: InspectorEvent[]) => {
    setKept((k) => {
      const r = keepEvents(k.events, incoming, capRef.current);
      return { events: r.list, dropped: k.dropped + r.dropped };
    });
  };

  const stop = () => {
    closeRef.current?.();
    closeRef.current = null;
  };
  // Closing the page closes the stream (the bff then deletes an inspection session).
  useEffect(() => () => closeRef.current?.(), []);

  const start = async () => {
    stop();
    setStatus({ state: 'opening' });
    if (viewpoint === 'user' && !user) {
      setStatus({ state: 'error', error: 'Pick the user to inspect as.' });
      return;
    }
    const userId = viewpoint === 'user' ? user?.objectId : undefined;
    const label = viewpoint === 'user' && user ? `user ${userName(user)}` : viewpoint;
    closeRef.current = openStream(
      { appId, className, where, viewpoint, userId },
      {
        onReady: () => setStatus({ state: 'live', label }),
        onEvent: (e) => {
          const ev = { ...e, seq: ++seq.current };
          if (pausedRef.current) setHeld((h) => [...h, ev]);
          else add([ev]);
        },
        onFail: (error) => {
          closeRef.current = null;
          setStatus({ state: 'error', error });
        },
      },
    );
  };

  const resume = () => {
    setPaused(false);
    add(held);
    setHeld([]);
  };

  const exportJson = () => {
    const blob = new Blob([JSON.stringify({ className, viewpoint, where, events }, null, 2)], {
      type: 'application/json',
    });
    const url = URL.createObjectURL(blob);
    const a = document.createElement('a');
    a.href = url;
    a.download = `realtime-${className}-${index}.json`;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  };

  const running = status.state === 'live' || status.state === 'opening';
  const shown = kind === 'all' ? events : events.filter((e) => e.kind === kind);

  return (
    <section aria-label={`Inspector ${index}`} className="min-w-0 flex-1 space-y-2 rounded border p-3">
      <div className="flex flex-wrap items-end gap-2">
        <label className="text-sm">
          Viewpoint{' '}
          <select
            aria-label="Viewpoint"
            className={input}
            value={viewpoint}
            disabled={running}
            onChange={(e) => setViewpoint(e.target.value as Viewpoint)}
          >
            <option value="master">master</option>
            <option value="user">a user</option>
            <option value="anonymous">anonymous</option>
          </select>
        </label>
        {viewpoint === 'user' && (
          <span className="flex items-center gap-1 text-sm">
            {user && (
              <span data-testid="inspector-user">
                as <strong>{userName(user)}</strong>
              </span>
            )}
            {!running && <UserPicker appId={appId} label="Username" width="w-40" onPick={setUser} />}
          </span>
        )}
        {running ? (
          <button
            type="button"
            className={button}
            onClick={() => {
              stop();
              setStatus({ state: 'stopped' });
            }}
          >
            Stop
          </button>
        ) : (
          <button type="button" className={`${button} bg-blue-600 text-white`} onClick={() => void start()}>
            Start
          </button>
        )}
        <span data-testid="inspector-status" className="text-xs text-slate-500" role="status">
          {status.state === 'stopped'
            ? 'Stopped'
            : status.state === 'opening'
              ? 'Connecting…'
              : status.state === 'live'
                ? `Listening as ${status.label}`
                : status.error}
        </span>
      </div>
      <details>
        <summary className="cursor-pointer text-sm">
          Where <code className="text-xs">{JSON.stringify(where)}</code>
        </summary>
        <FilterBuilder
          schema={schema}
          columns={columnsOf(schema)}
          where={where}
          onApply={(w) => setWhere(w)}
          saved={[]}
          me=""
          canSave={false}
          onSave={() => undefined}
          onDelete={() => undefined}
        />
        {running && <p className="text-xs text-slate-500">Stop and start again to use a new where.</p>}
      </details>
      <div className="flex flex-wrap items-center gap-2 text-sm">
        {paused ? (
          <button type="button" className={button} onClick={resume}>
            Resume
          </button>
        ) : (
          <button type="button" className={button} onClick={() => setPaused(true)}>
            Pause
          </button>
        )}
        <button
          type="button"
          className={button}
          onClick={() => {
            setKept({ events: [], dropped: 0 });
            setHeld([]);
          }}
        >
          Clear events
        </button>
        <label>
          Kind{' '}
          <select
            aria-label="Show kind"
            className={input}
            value={kind}
            onChange={(e) => setKind(e.target.value)}
          >
            <option value="all">all</option>
            {KINDS.map((k) => (
              <option key={k} value={k}>
                {k}
              </option>
            ))}
          </select>
        </label>
        <label>
          Keep{' '}
          <input
            aria-label="Keep at most"
            type="number"
            min={1}
            max={10000}
            className={`${input} w-20`}
            value={cap}
            onChange={(e) => {
              const n = Math.max(1, Math.min(10_000, Number(e.target.value) || 1));
              setCap(n);
              setKept((k) =>
                k.events.length <= n
                  ? k
                  : { events: k.events.slice(0, n), dropped: k.dropped + k.events.length - n },
              );
            }}
          />
        </label>
        <button type="button" className={button} onClick={exportJson} disabled={events.length === 0}>
          Export JSON
        </button>
        <span data-testid="event-counts" className="text-xs text-slate-500">
          {events.length} kept · {dropped} dropped{paused ? ` · ${held.length} held while paused` : ''}
        </span>
      </div>
      <ol aria-label="Events" className="max-h-[60vh] space-y-1 overflow-y-auto">
        {shown.map((ev) => (
          <EventItem key={ev.seq} ev={ev} />
        ))}
      </ol>
    </section>
  );
}

import { useEffect, useMemo, useState } from 'react';
import { Button } from '../../../components/ui/button.tsx';
import { Dialog } from '../../../components/ui/dialog.tsx';
import { Input, Select, Textarea } from '../../../components/ui/input.tsx';
import { toast } from '../../../lib/toast.ts';
import { useAudience, useSendPush } from '../api/push.ts';

type Mode = 'channels' | 'where';

/** Debounces a value (the audience count asks the service as the admin types). */
function useDebounced<T>(value: T, ms: number): T {
  const [v, setV] = useState(value);
  useEffect(() => {
    const t = setTimeout(() => setV(value), ms);
    return () => clearTimeout(t);
  }, [value, ms]);
  return v;
}

function parseJsonObject(text: string): Record<string, unknown> | undefined | 'invalid' {
  if (!text.trim()) return undefined;
  try {
    const v = JSON.parse(text);
    return v && typeof v === 'object' && !Array.isArray(v) ? v : 'invalid';
  } catch {
    return 'invalid';
  }
}

/** Compose a push: audience with a live count per device type, message, schedule, preview, confirmation. */
export function Compose({ appId }: { appId: string }) {
  const [mode, setMode] = useState<Mode>('where');
  const [channels, setChannels] = useState('');
  const [whereText, setWhereText] = useState('{}');
  const [title, setTitle] = useState('');
  const [alert, setAlert] = useState('');
  const [badge, setBadge] = useState('');
  const [sound, setSound] = useState('');
  const [custom, setCustom] = useState('');
  const [pushTime, setPushTime] = useState('');
  const [expiresIn, setExpiresIn] = useState('');
  const [confirming, setConfirming] = useState(false);
  const send = useSendPush(appId);

  const where = parseJsonObject(whereText);
  const channelList = channels
    .split(',')
    .map((c) => c.trim())
    .filter(Boolean);
  // Debounced as text: a new object every render would never settle.
  const audienceText = useDebounced(
    JSON.stringify(
      mode === 'where'
        ? { where: where === 'invalid' ? undefined : JSON.stringify(where ?? {}) }
        : { channels: channelList.join(',') },
    ),
    250,
  );
  const audienceInput = useMemo(
    () => JSON.parse(audienceText) as { where?: string; channels?: string },
    [audienceText],
  );
  const audienceValid = mode === 'where' ? where !== 'invalid' : channelList.length > 0;
  const audience = useAudience(appId, audienceInput, audienceValid);
  const customData = parseJsonObject(custom);

  const body = useMemo(() => {
    const data: Record<string, unknown> = customData && customData !== 'invalid' ? { ...customData } : {};
    if (title) data.title = title;
    if (alert) data.alert = alert;
    if (badge === 'Increment') data.badge = 'Increment';
    else if (badge !== '' && Number.isInteger(Number(badge))) data.badge = Number(badge);
    if (sound) data.sound = sound;
    const out: Record<string, unknown> = { data };
    if (mode === 'where') out.where = where && where !== 'invalid' ? where : {};
    else out.channels = channelList;
    if (pushTime) out.push_time = new Date(pushTime).toISOString();
    if (expiresIn) out.expiration_interval = Number(expiresIn);
    return out;
  }, [customData, title, alert, badge, sound, mode, where, channelList, pushTime, expiresIn]);

  const badgeValue = (body.data as Record<string, unknown>).badge;
  const previewBadge =
    badgeValue === undefined ? undefined : badgeValue === 'Increment' ? '+1' : String(badgeValue);

  const problem = !audienceValid
    ? mode === 'where'
      ? 'The where must be a JSON object.'
      : 'Name at least one channel.'
    : customData === 'invalid'
      ? 'Custom data must be a JSON object.'
      : !title && !alert && !customData
        ? 'Write a message (title or alert) or custom data.'
        : null;

  return (
    <section
      aria-label="Compose a push"
      className="space-y-4 rounded-lg border border-slate-200 p-4 dark:border-slate-700"
    >
      <h2 className="text-base font-semibold">Compose</h2>
      <div className="grid gap-4 md:grid-cols-2">
        <div className="space-y-3">
          <fieldset className="flex gap-4 text-sm">
            <legend className="mb-1 font-medium">Audience</legend>
            <label className="flex items-center gap-1">
              <input
                type="radio"
                name="audience"
                checked={mode === 'where'}
                onChange={() => setMode('where')}
              />{' '}
              Installations matching a where
            </label>
            <label className="flex items-center gap-1">
              <input
                type="radio"
                name="audience"
                checked={mode === 'channels'}
                onChange={() => setMode('channels')}
              />{' '}
              Channels
            </label>
          </fieldset>
          {mode === 'where' ? (
            <Textarea
              aria-label="Where (JSON)"
              rows={3}
              className="w-full"
              value={whereText}
              onChange={(e) => setWhereText(e.target.value)}
            />
          ) : (
            <Input
              aria-label="Channels"
              placeholder="news, sport"
              className="w-full"
              value={channels}
              onChange={(e) => setChannels(e.target.value)}
            />
          )}
          <p className="text-sm" data-testid="audience-count" aria-live="polite">
            {!audienceValid
              ? '—'
              : audience.data
                ? `${audience.data.total} ${audience.data.total === 1 ? 'device' : 'devices'}${
                    Object.keys(audience.data.byType).length
                      ? `: ${Object.entries(audience.data.byType)
                          .map(([t, n]) => `${t} ${n}`)
                          .join(', ')}`
                      : ''
                  }`
                : audience.isError
                  ? `Cannot count: ${audience.error.message}`
                  : 'Counting…'}
          </p>
          <Input
            aria-label="Title"
            placeholder="Title"
            className="w-full"
            value={title}
            onChange={(e) => setTitle(e.target.value)}
          />
          <Textarea
            aria-label="Message"
            placeholder="Message"
            rows={2}
            className="w-full font-sans"
            value={alert}
            onChange={(e) => setAlert(e.target.value)}
          />
          <div className="flex gap-2">
            <Select
              aria-label="Badge"
              value={badge === 'Increment' || badge === '' ? badge : 'number'}
              onChange={(e) => setBadge(e.target.value === 'number' ? '1' : e.target.value)}
            >
              <option value="">No badge</option>
              <option value="Increment">Badge +1</option>
              <option value="number">Set badge</option>
            </Select>
            {badge !== '' && badge !== 'Increment' && (
              <Input
                aria-label="Badge number"
                type="number"
                className="w-20"
                value={badge}
                onChange={(e) => setBadge(e.target.value)}
              />
            )}
            <Input
              aria-label="Sound"
              placeholder="Sound"
              value={sound}
              onChange={(e) => setSound(e.target.value)}
            />
          </div>
          <Textarea
            aria-label="Custom data (JSON)"
            placeholder='{"story": 42}'
            rows={2}
            className="w-full"
            value={custom}
            onChange={(e) => setCustom(e.target.value)}
          />
          <div className="flex flex-wrap gap-2 text-sm">
            <div className="flex items-center gap-1">
              Send at{' '}
              <Input
                aria-label="Send at"
                type="datetime-local"
                value={pushTime}
                onChange={(e) => setPushTime(e.target.value)}
              />
            </div>
            <div className="flex items-center gap-1">
              Expires after (s){' '}
              <Input
                aria-label="Expires after seconds"
                type="number"
                min={1}
                className="w-24"
                value={expiresIn}
                onChange={(e) => setExpiresIn(e.target.value)}
              />
            </div>
          </div>
        </div>
        <div>
          <p className="mb-1 text-sm font-medium">Preview</p>
          <div
            data-testid="push-preview"
            className="max-w-xs rounded-2xl bg-slate-100 p-3 shadow-inner dark:bg-slate-800"
          >
            <div className="flex items-start gap-2 rounded-xl bg-white p-3 shadow dark:bg-slate-900">
              <div className="h-8 w-8 shrink-0 rounded-lg bg-indigo-600" aria-hidden />
              <div className="min-w-0 flex-1 text-sm">
                <p className="font-semibold">{title || 'Your app'}</p>
                <p className="whitespace-pre-wrap break-words text-slate-600 dark:text-slate-300">
                  {alert || '…'}
                </p>
              </div>
              {previewBadge !== undefined && (
                <span
                  className="rounded-full bg-red-600 px-1.5 text-xs text-white"
                  data-testid="preview-badge"
                >
                  {previewBadge}
                </span>
              )}
            </div>
            {pushTime && (
              <p className="mt-2 text-xs text-slate-500">
                Scheduled for {new Date(pushTime).toLocaleString()}
              </p>
            )}
          </div>
        </div>
      </div>
      {problem && <p className="text-sm text-amber-700 dark:text-amber-400">{problem}</p>}
      <Button
        variant="primary"
        disabled={problem !== null || send.isPending}
        onClick={() => setConfirming(true)}
      >
        Send…
      </Button>
      <Dialog
        open={confirming}
        title="Send this push?"
        onClose={() => setConfirming(false)}
        footer={
          <>
            <Button onClick={() => setConfirming(false)}>Cancel</Button>
            <Button
              variant="primary"
              onClick={() => {
                setConfirming(false);
                send.mutate(body, {
                  onSuccess: (r) => toast.success('Push accepted.', `Status ${r.pushStatusId}`),
                  onError: (err) => toast.error(err, 'Push refused'),
                });
              }}
            >
              Send to {audience.data?.total ?? 0} {audience.data?.total === 1 ? 'device' : 'devices'}
            </Button>
          </>
        }
      >
        <p className="text-sm" data-testid="confirm-audience">
          This push goes to {audience.data?.total ?? 0} {audience.data?.total === 1 ? 'device' : 'devices'}
          {pushTime ? ` at ${new Date(pushTime).toLocaleString()}` : ' now'}.
        </p>
      </Dialog>
    </section>
  );
}

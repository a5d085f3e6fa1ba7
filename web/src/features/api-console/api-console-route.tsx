import { useEffect, useRef, useState } from 'react';
import { useParams, useSearchParams } from 'react-router';
import { Button } from '../../components/ui/button.tsx';
import { Input, Select, Textarea } from '../../components/ui/input.tsx';
import { isApiError } from '../../lib/api.ts';
import { useCanWrite } from '../../lib/session.ts';
import { fetchCurl, useSendCall } from './api/api-console.ts';
import { CallAnswer } from './components/call-answer.tsx';
import { HistoryPanel } from './components/history-panel.tsx';
import { RunAsUserPicker } from './components/run-as-user-picker.tsx';
import { type ApiCall, METHODS, type Method, parseBody, parseObject, type RunAs } from './lib/call.ts';
import { addToHistory, clearHistory, type HistoryEntry, readHistory } from './lib/history.ts';
import { prefillOf } from './lib/prefill.ts';

type AsKind = RunAs['kind'];
const pretty = (v: unknown) => (v === undefined ? '' : JSON.stringify(v, null, 2));

/** /apps/:appId/api-console: compose a REST call, send it through the bff, read the answer. */
export default function ApiConsoleRoute() {
  const { appId = '' } = useParams();
  // One console per app: its form, answer and history start afresh when the app changes.
  return <ApiConsole key={appId} appId={appId} />;
}

function ApiConsole({ appId }: { appId: string }) {
  const canWrite = useCanWrite();
  const send = useSendCall(appId);

  // A call prefilled by the address (a class's API tab, "Try it"); a read of rows with run=1 is sent at once.
  const [searchParams] = useSearchParams();
  const [prefill] = useState(() => prefillOf(searchParams));
  const [method, setMethod] = useState<Method>(prefill.method);
  const [path, setPath] = useState(prefill.path);
  const [queryText, setQueryText] = useState(prefill.queryText);
  const [bodyText, setBodyText] = useState(prefill.bodyText);
  const [asKind, setAsKind] = useState<AsKind>(prefill.as);
  const [user, setUser] = useState<{ userId: string; username: string } | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [curl, setCurl] = useState<string | null>(null);
  const [history, setHistory] = useState<HistoryEntry[]>(() => readHistory(localStorage, appId));

  const methods: readonly Method[] = canWrite ? METHODS : ['GET'];
  const methodAllowed = methods.includes(method);

  /** The call on screen, or why it cannot be sent. */
  const compose = (): ApiCall | string => {
    const trimmed = path.trim();
    if (!trimmed.startsWith('/')) return 'The path starts with /, e.g. /classes/Post.';
    const query = parseObject(queryText, 'Query');
    if (!query.ok) return query.error;
    const body = method === 'GET' ? { ok: true as const, value: undefined } : parseBody(bodyText);
    if (!body.ok) return body.error;
    let as: RunAs;
    if (asKind === 'user') {
      if (!user) return 'Choose the user to run the call as.';
      as = { kind: 'user', ...user };
    } else as = { kind: asKind };
    return { method, path: trimmed, query: query.value, body: body.value, as };
  };

  const run = (call: ApiCall) => {
    setProblem(null);
    setHistory(addToHistory(localStorage, appId, call));
    send.mutate(call);
  };

  const load = (call: ApiCall) => {
    setMethod(call.method);
    setPath(call.path);
    setQueryText(Object.keys(call.query).length ? pretty(call.query) : '');
    setBodyText(pretty(call.body));
    setAsKind(call.as.kind);
    setUser(call.as.kind === 'user' ? { userId: call.as.userId, username: call.as.username } : null);
    setCurl(null);
  };

  const ran = useRef(false);
  // biome-ignore lint/correctness/useExhaustiveDependencies: once, on the prefilled call
  useEffect(() => {
    if (!prefill.run || ran.current) return;
    ran.current = true;
    const call = compose();
    if (typeof call !== 'string') run(call);
  }, []);

  const submit = () => {
    const call = compose();
    if (typeof call === 'string') return setProblem(call);
    run(call);
  };

  const showCurl = () => {
    const call = compose();
    if (typeof call === 'string') return setProblem(call);
    setProblem(null);
    fetchCurl(appId, call).then(
      ({ curl: text }) => {
        setCurl(text);
        navigator.clipboard?.writeText(text).catch(() => undefined);
      },
      (err: unknown) =>
        setProblem(isApiError(err) ? `${err.status} [${err.code}] ${err.error}` : String(err)),
    );
  };

  const error = send.error;
  return (
    <div className="mx-auto grid max-w-7xl gap-6 p-6 lg:grid-cols-[1fr_20rem]">
      <div className="min-w-0 space-y-4">
        <div>
          <h1 className="text-xl font-semibold">API console</h1>
          <p className="mt-1 text-sm text-slate-500 dark:text-slate-400">
            Send a REST call to the service through the console, as master, as a user or anonymous. Calls as a
            user, and writes as anonymous, run with that viewpoint's permissions without a session: writes are
            dry runs that change nothing.
          </p>
        </div>
        <form
          className="space-y-3"
          onSubmit={(e) => {
            e.preventDefault();
            submit();
          }}
        >
          <div className="flex flex-wrap items-end gap-2">
            <label className="text-sm">
              Method
              <Select
                aria-label="Method"
                className="ml-2"
                value={method}
                onChange={(e) => setMethod(e.target.value as Method)}
              >
                {methods.map((m) => (
                  <option key={m}>{m}</option>
                ))}
                {!methodAllowed && <option value={method}>{method}</option>}
              </Select>
            </label>
            <label className="min-w-64 flex-1 text-sm">
              Path
              <Input
                aria-label="Path"
                className="ml-2 w-[calc(100%-3rem)] font-mono"
                value={path}
                spellCheck={false}
                onChange={(e) => setPath(e.target.value)}
              />
            </label>
          </div>
          {!canWrite && (
            <p className="text-xs text-slate-500">
              Read-only console users may send GET requests only. Paths that hand out secrets (/devMailbox,
              sessions, /aggregate) are refused, and answers show session tokens, keys and reset links as
              [FILTERED].
            </p>
          )}
          <label className="block text-sm">
            Query (JSON)
            <Textarea
              aria-label="Query (JSON)"
              className="mt-1 block h-20 w-full"
              placeholder={'{"where": {"title": "Hello"}, "limit": 10, "order": "-createdAt"}'}
              spellCheck={false}
              value={queryText}
              onChange={(e) => setQueryText(e.target.value)}
            />
          </label>
          {method !== 'GET' && (
            <label className="block text-sm">
              Body (JSON)
              <Textarea
                aria-label="Body (JSON)"
                className="mt-1 block h-28 w-full"
                placeholder={'{"title": "Hello"}'}
                spellCheck={false}
                value={bodyText}
                onChange={(e) => setBodyText(e.target.value)}
              />
            </label>
          )}
          <div className="flex flex-wrap items-center gap-3 text-sm">
            <label>
              Run as
              <Select
                aria-label="Run as"
                className="ml-2"
                value={asKind}
                onChange={(e) => setAsKind(e.target.value as AsKind)}
              >
                <option value="master">master key</option>
                <option value="user">a user</option>
                <option value="anonymous">anonymous (application keys)</option>
              </Select>
            </label>
            {asKind === 'user' && <RunAsUserPicker appId={appId} user={user} onPick={setUser} />}
          </div>
          <div className="flex flex-wrap gap-2">
            <Button type="submit" variant="primary" disabled={send.isPending || !methodAllowed}>
              {send.isPending ? 'Sending…' : 'Send'}
            </Button>
            <Button onClick={showCurl}>Copy as curl</Button>
          </div>
          {problem && (
            <p role="alert" className="text-sm text-red-600">
              {problem}
            </p>
          )}
        </form>
        {curl && (
          <div className="space-y-1">
            <p className="text-xs text-slate-500">
              Copied to the clipboard. Keys and tokens are shell variables: set them in your terminal. From a
              terminal the call runs for real, dry run or not here.
            </p>
            <pre
              data-testid="curl-command"
              className="overflow-auto rounded bg-slate-100 p-2 font-mono text-xs dark:bg-slate-800"
            >
              {curl}
            </pre>
          </div>
        )}
        {error && (
          <p role="alert" data-testid="call-error" className="text-sm text-red-600">
            {isApiError(error) ? `${error.status} [${error.code}] ${error.error}` : error.message}
          </p>
        )}
        {send.data && !send.isPending && !error && <CallAnswer answer={send.data} />}
      </div>
      <HistoryPanel
        entries={history}
        canRun={(call) => methods.includes(call.method)}
        onLoad={load}
        onRerun={(call) => {
          load(call);
          run(call);
        }}
        onClear={() => {
          clearHistory(localStorage, appId);
          setHistory([]);
        }}
      />
    </div>
  );
}

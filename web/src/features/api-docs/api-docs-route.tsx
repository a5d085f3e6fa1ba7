import { useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { Button } from '../../components/ui/button.tsx';
import { Select } from '../../components/ui/input.tsx';
import { Tabs } from '../../components/ui/tabs.tsx';
import { errorText } from '../../lib/api.ts';
import { useApiDocument, useSomeRowId } from './api/api-docs.ts';
import {
  classOperations,
  exampleOf,
  LANGUAGE_LABELS,
  LANGUAGES,
  type Language,
  tryItSearch,
} from './lib/operations.ts';

type TryAs = 'master' | 'anonymous' | 'user';
/** Stands for a row id in the examples while the class has no row. */
const NO_ROW = 'OBJECT_ID';

/**
 * /apps/:appId/api-docs/:className: a class's API, from the service's API document
 * (docs/protocol.md#openapi): the operations it allows (as master, and whether the public may use
 * each), examples in curl, the TypeScript client and the Parse JS SDK with the class's fields, and
 * "Try it" in the API console.
 */
export default function ApiDocsRoute() {
  const { appId = '', className = '' } = useParams();
  const navigate = useNavigate();
  const master = useApiDocument(appId, 'master');
  const publicDoc = useApiDocument(appId, 'anonymous');
  const row = useSomeRowId(appId, className);
  const [language, setLanguage] = useState<Language>('curl');
  const [tryAs, setTryAs] = useState<TryAs>('master');

  if (master.error) {
    return (
      <p role="alert" className="p-6 text-sm text-red-600">
        {errorText(master.error)}
      </p>
    );
  }
  if (!master.data) return <p className="p-6 text-sm text-slate-500">Loading the API document…</p>;
  const operations = classOperations(master.data, className);
  const publicKinds = new Set(
    publicDoc.data ? classOperations(publicDoc.data, className).map((o) => o.kind) : [],
  );
  const objectId = row.data ?? NO_ROW;

  return (
    <div className="mx-auto max-w-5xl space-y-4 p-6">
      <div className="flex flex-wrap items-baseline gap-3">
        <h1 className="text-xl font-semibold">API: {className}</h1>
        <Link
          className="text-sm text-indigo-700 underline dark:text-indigo-300"
          to={`/apps/${appId}/data/${className}`}
        >
          Back to the data
        </Link>
      </div>
      {operations.length === 0 ? (
        <p className="text-sm text-slate-500">
          The service's API document names no operation of {className}.
        </p>
      ) : (
        <>
          <p className="text-sm text-slate-500 dark:text-slate-400">
            The operations of {className} from the service's API document (GET /openapi.json). Keys in the
            examples are placeholders: set $SERVER_URL, $APPLICATION_ID and $REST_API_KEY (or $JAVASCRIPT_KEY)
            in your shell. "Public" says whether a client with the application keys only may use the
            operation.
          </p>
          <table className="w-full text-left text-sm" data-testid="api-operations">
            <thead>
              <tr className="border-b border-slate-200 dark:border-slate-700">
                <th className="py-1">Operation</th>
                <th>Method</th>
                <th>Path</th>
                <th>Public</th>
              </tr>
            </thead>
            <tbody>
              {operations.map((op) => (
                <tr key={op.kind} className="border-b border-slate-100 dark:border-slate-800">
                  <td className="py-1">{op.summary}</td>
                  <td className="font-mono">{op.method}</td>
                  <td className="font-mono">{op.path}</td>
                  <td>{publicDoc.data ? (publicKinds.has(op.kind) ? 'yes' : 'no') : '…'}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <div className="flex flex-wrap items-center gap-3 text-sm">
            <label>
              Try it as
              <Select
                aria-label="Try it as"
                className="ml-2"
                value={tryAs}
                onChange={(e) => setTryAs(e.target.value as TryAs)}
              >
                <option value="master">master key</option>
                <option value="anonymous">anonymous (application keys)</option>
                <option value="user">a user (writes are dry runs)</option>
              </Select>
            </label>
            {objectId === NO_ROW && (
              <span className="text-xs text-slate-500">
                {className} has no row yet: the examples on one row say {NO_ROW}.
              </span>
            )}
          </div>
          <Tabs
            tabs={LANGUAGES.map((id) => ({ id, label: LANGUAGE_LABELS[id] }))}
            current={language}
            onSelect={setLanguage}
          />
          {operations.map((op) => (
            <section key={op.kind} className="space-y-1" aria-label={op.summary}>
              <div className="flex items-center gap-3">
                <h2 className="font-mono text-sm font-semibold">
                  {op.method} {op.path}
                </h2>
                <Button
                  onClick={() => navigate(`/apps/${appId}/api-console${tryItSearch(op, objectId, tryAs)}`)}
                  aria-label={`Try ${op.method} ${op.path}`}
                >
                  Try it
                </Button>
              </div>
              <pre
                data-testid={`example-${op.kind}`}
                className="overflow-auto rounded bg-slate-100 p-2 font-mono text-xs dark:bg-slate-800"
              >
                {exampleOf(master.data, className, op, language, objectId)}
              </pre>
            </section>
          ))}
        </>
      )}
    </div>
  );
}

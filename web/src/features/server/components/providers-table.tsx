import type { AuthProvider } from '../api/server-options.ts';
import { KIND_LABELS } from '../lib/options.ts';

const cell = 'px-3 py-2 align-top';

interface KeyDigest {
  kid?: string;
  type?: string;
  sha256?: string;
}

/** An ID token provider of the option `auth` as the service shows it. */
export interface IdTokenConfig {
  issuer?: string | string[];
  audience?: string | string[];
  jwks?: { keys?: KeyDigest[] };
  publicKeys?: KeyDigest[];
}

const list = (v: string | string[] | undefined) => (Array.isArray(v) ? v.join(', ') : (v ?? ''));

/** An ID token provider's issuer, audience and keys (by id and digest: the service sends no key text). */
function IdTokenDetails({ config }: { config: IdTokenConfig | undefined }) {
  if (!config) return null;
  const keys = config.jwks?.keys ?? config.publicKeys ?? [];
  return (
    <dl className="mt-1 grid grid-cols-[auto_1fr] gap-x-3 text-xs text-slate-500 dark:text-slate-400">
      <dt>issuer</dt>
      <dd className="font-mono break-all">{list(config.issuer)}</dd>
      <dt>audience</dt>
      <dd className="font-mono break-all">{list(config.audience)}</dd>
      <dt>keys</dt>
      <dd className="font-mono break-all">
        {keys.map((k) => `${k.kid ?? k.type ?? 'key'} (sha256 ${(k.sha256 ?? '').slice(0, 12)}…)`).join(', ')}
      </dd>
    </dl>
  );
}

/** The sign-in providers `authData` accepts: the built-in one, the option `auth`'s, the cloud module's. */
export function ProvidersTable({
  providers,
  auth,
}: {
  providers: AuthProvider[];
  /** The value of the option `auth`, for the ID token providers' details. */
  auth: Record<string, IdTokenConfig> | undefined;
}) {
  return (
    <div className="overflow-x-auto rounded-md border border-slate-200 dark:border-slate-700">
      <table className="w-full table-fixed text-left text-sm" aria-label="Sign-in providers">
        <thead className="bg-slate-50 text-xs text-slate-500 uppercase dark:bg-slate-800 dark:text-slate-400">
          <tr>
            <th className={`${cell} w-1/4`}>Provider</th>
            <th className={`${cell} w-1/4`}>Kind</th>
            <th className={cell}>Description</th>
          </tr>
        </thead>
        <tbody className="divide-y divide-slate-200 dark:divide-slate-700">
          {providers.map((p) => (
            <tr key={p.name} data-provider={p.name}>
              <td className={cell}>
                <code className="font-mono text-xs">{p.name}</code>
              </td>
              <td className={cell}>{KIND_LABELS[p.kind]}</td>
              <td className={`${cell} text-slate-600 dark:text-slate-300`}>
                {p.description}
                {p.kind === 'idToken' && <IdTokenDetails config={auth?.[p.name]} />}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

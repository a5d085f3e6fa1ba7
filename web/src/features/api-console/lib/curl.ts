import { type ApiCall, queryString } from './call.ts';

/**
 * The call as a `curl` command for a terminal. Keys and the session token are shell variables
 * (`$MASTER_KEY`, `$REST_API_KEY`, `$SESSION_TOKEN`): the browser never holds their values. A
 * call as a user or anonymous runs for real from a terminal (the console's own run is a dry run
 * for writes).
 */
export const PLACEHOLDERS = {
  applicationId: '$APPLICATION_ID',
  masterKey: '$MASTER_KEY',
  restAPIKey: '$REST_API_KEY',
  sessionToken: '$SESSION_TOKEN',
} as const;

/** Single-quotes for a POSIX shell: nothing inside is expanded. */
const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

export function toCurl(serverURL: string, call: ApiCall): string {
  const qs = queryString(call.query);
  const url = `${serverURL.replace(/\/+$/, '')}${call.path}${qs ? `?${qs}` : ''}`;
  const lines = [`curl -X ${call.method} ${quote(url)}`];
  // Double quotes: the shell expands the placeholder variables.
  const header = (name: string, value: string) => lines.push(`-H "${name}: ${value}"`);
  header('X-Backend-Application-Id', PLACEHOLDERS.applicationId);
  if (call.as.kind === 'master') header('X-Backend-Master-Key', PLACEHOLDERS.masterKey);
  else header('X-Backend-REST-API-Key', PLACEHOLDERS.restAPIKey);
  if (call.as.kind === 'user') header('X-Backend-Session-Token', PLACEHOLDERS.sessionToken);
  if (call.body !== undefined) {
    header('Content-Type', 'application/json');
    lines.push(`--data-raw ${quote(JSON.stringify(call.body))}`);
  }
  return lines.join(' \\\n  ');
}

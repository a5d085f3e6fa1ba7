import { METHODS, type Method, type RunAs } from './call.ts';

export interface Prefill {
  method: Method;
  path: string;
  queryText: string;
  bodyText: string;
  as: RunAs['kind'];
  /**
   * Send at once: only a read of rows (a GET of a class's records) as master or anonymous. A write,
   * a call as a user and any other path wait for Send, so a link cannot make the console do more
   * than read.
   */
  run: boolean;
}

/** The paths of a class's rows (docs/protocol.md#records): what a prefilled GET may run at once. */
const ROW_READ = /^\/(?:classes\/[A-Za-z][A-Za-z0-9_]*|users|roles|installations)(?:\/[A-Za-z0-9]+)?$/;

const pretty = (text: string | null): string => {
  if (!text) return '';
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
};

/**
 * The call an address prefills (`?method=GET&path=/classes/Post&query={...}&body={...}&as=master&run=1`,
 * as a class's API tab links it); anything missing or unknown keeps the console's default.
 */
export function prefillOf(params: URLSearchParams): Prefill {
  const method = (METHODS as readonly string[]).includes(params.get('method') ?? '')
    ? (params.get('method') as Method)
    : 'GET';
  const asParam = params.get('as');
  const path = params.get('path') ?? '/classes/';
  const as: RunAs['kind'] = asParam === 'anonymous' || asParam === 'user' ? asParam : 'master';
  return {
    method,
    path,
    queryText: pretty(params.get('query')),
    bodyText: pretty(params.get('body')),
    as,
    run: params.get('run') === '1' && method === 'GET' && as !== 'user' && ROW_READ.test(path),
  };
}

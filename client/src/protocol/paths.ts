/**
 * The normal form of a request path: the one spelling under which the service routes a request,
 * counts it against its rate limits and matches it against option patterns (idempotency), and under
 * which the console checks what a read-only user may send. Every part that decides something about
 * a path decides it on this form, so `/login/`, `//login` and `/%6Cogin` cannot slip past a rule
 * that the router then dispatches as `/login`.
 *
 * The form: empty segments dropped (doubled, leading and trailing slashes), each segment's
 * %-escapes decoded, then only the characters that would change the path's shape written as
 * escapes again (`%`, `/`, `?`, `#`). It is idempotent: the normal form of a normal form is itself.
 */

/** Characters escaped again after decoding: they would split or cut the path, or start an escape. */
const SHAPING = /[%/?#]/g;
const ESCAPES: Record<string, string> = { '%': '%25', '/': '%2F', '?': '%3F', '#': '%23' };

/** A path that is already normal needs no work: no escape, no empty segment, no trailing slash. */
function alreadyNormal(path: string): boolean {
  return (
    path.charCodeAt(0) === 47 /* / */ &&
    !path.includes('//') &&
    !path.includes('%') &&
    (path.length === 1 || path.charCodeAt(path.length - 1) !== 47)
  );
}

/**
 * The decoded segments of a path (empty ones dropped); `undefined` when a segment holds a malformed
 * %-escape (the caller answers that as bad input).
 */
export function pathSegments(path: string): string[] | undefined {
  const segments: string[] = [];
  for (const part of path.split('/')) {
    if (part === '') continue;
    if (!part.includes('%')) {
      segments.push(part);
      continue;
    }
    try {
      segments.push(decodeURIComponent(part));
    } catch {
      return undefined;
    }
  }
  return segments;
}

/** The normal form of `path` (below the mount path, without its query); `undefined` when malformed. */
export function normalPath(path: string): string | undefined {
  if (alreadyNormal(path)) return path;
  const segments = pathSegments(path);
  if (segments === undefined) return undefined;
  return `/${segments.map((s) => s.replace(SHAPING, (c) => ESCAPES[c]!)).join('/')}`;
}

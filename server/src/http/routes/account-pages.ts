import type { IncomingMessage, ServerResponse } from 'node:http';
import { safeEqual } from '../../kernel/ids.ts';
import type { Users } from '../../users/service.ts';
import { escapeHtml } from '../../users/shared.ts';

/**
 * The pages behind the links in account mails, served without application keys (a browser follows
 * them): GET/POST {mount}/apps/<appId>/reset (set a new password) and GET
 * {mount}/apps/<appId>/verify_email. Plain HTML forms, no scripts (the CSP forbids them), no
 * referrer (the token is in the address), never cached.
 */
export type PageHandler = (req: IncomingMessage, res: ServerResponse, path: string) => Promise<boolean>;

/** The headers of every account page (not the protocol's request HEADERS). */
const PAGE_HEADERS = {
  'Content-Type': 'text/html; charset=utf-8',
  'Content-Security-Policy':
    "default-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-store',
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
};
const FORM_LIMIT = 16 * 1024;

function page(res: ServerResponse, status: number, title: string, body: string): void {
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title></head>
<body><main><h1>${escapeHtml(title)}</h1>
${body}
</main></body></html>
`;
  res.writeHead(status, { ...PAGE_HEADERS, 'Content-Length': Buffer.byteLength(html) });
  res.end(html);
}

function readForm(req: IncomingMessage): Promise<URLSearchParams | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > FORM_LIMIT) {
        req.removeAllListeners('data');
        req.resume();
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(new URLSearchParams(Buffer.concat(chunks).toString('utf8'))));
    req.on('error', () => resolve(undefined));
  });
}

function resetForm(token: string, message = ''): string {
  return `${message ? `<p role="alert">${escapeHtml(message)}</p>\n` : ''}<form method="post" action="reset">
<input type="hidden" name="token" value="${escapeHtml(token)}">
<p><label>New password <input type="password" name="new_password" autocomplete="new-password" required></label></p>
<p><label>Repeat it <input type="password" name="confirm_password" autocomplete="new-password" required></label></p>
<p><button type="submit">Set password</button></p>
</form>`;
}

const INVALID_LINK = '<p>This link is invalid, was already used, or has expired. Ask for a new one.</p>';

export function accountPages(users: Users, appId: string): PageHandler {
  return async (req, res, path) => {
    const m = /^\/apps\/([^/]+)\/(reset|verify_email)$/.exec(path);
    if (!m) return false;
    let app: string;
    try {
      app = decodeURIComponent(m[1]!);
    } catch {
      return false;
    }
    if (!safeEqual(app, appId)) {
      page(res, 404, 'Not found', '<p>There is no such page.</p>');
      return true;
    }
    const query = new URLSearchParams((req.url ?? '').split('?')[1] ?? '');
    const kind = m[2]!;
    if (kind === 'verify_email') {
      if (req.method !== 'GET') return false;
      const ok = await users.verifyEmail(query.get('token') ?? '');
      if (ok) page(res, 200, 'Email verified', '<p>Thank you, your email address is verified.</p>');
      else page(res, 400, 'Email not verified', INVALID_LINK);
      return true;
    }
    if (req.method === 'GET') {
      const token = query.get('token') ?? '';
      if (!(await users.userForToken('reset', token))) page(res, 400, 'Reset password', INVALID_LINK);
      else page(res, 200, 'Reset password', resetForm(token));
      return true;
    }
    if (req.method !== 'POST') return false;
    const form = await readForm(req);
    const token = form?.get('token') ?? '';
    const password = form?.get('new_password') ?? '';
    if (!form || !(await users.userForToken('reset', token))) {
      page(res, 400, 'Reset password', INVALID_LINK);
      return true;
    }
    if (password === '') {
      page(res, 400, 'Reset password', resetForm(token, 'Enter a new password.'));
      return true;
    }
    if (password !== (form.get('confirm_password') ?? password)) {
      page(res, 400, 'Reset password', resetForm(token, 'The two passwords differ.'));
      return true;
    }
    if (!(await users.resetPassword(token, password))) {
      page(res, 400, 'Reset password', INVALID_LINK);
      return true;
    }
    page(res, 200, 'Password changed', '<p>Your password is changed. Log in with the new password.</p>');
    return true;
  };
}

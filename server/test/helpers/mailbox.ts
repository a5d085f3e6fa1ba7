import type { TestService } from './service.ts';

/** A mail as the dev mailbox lists it (GET /devMailbox). */
export interface Mail {
  to: string;
  subject: string;
  text: string;
  html: string;
  sentAt: string;
}

/** Every mail the service has sent so far (master-only route). */
export async function mailbox(t: TestService): Promise<Mail[]> {
  const res = await t.request('GET', '/devMailbox', { as: 'master' });
  if (res.status !== 200) throw new Error(res.text);
  return res.json.results as Mail[];
}

/** Mail is sent after the answer: wait for the n-th mail to `to`. */
export async function waitForMail(t: TestService, to: string, n = 1): Promise<Mail> {
  for (let i = 0; i < 150; i++) {
    const mails = (await mailbox(t)).filter((m) => m.to === to);
    if (mails.length >= n) return mails[n - 1]!;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no mail #${n} to ${to}`);
}

/** The link to an account page (`reset`, `verify_email`) in a mail, as the mail names it. */
export const linkIn = (mail: Pick<Mail, 'text'>, page: string) => {
  const m = new RegExp(`https?://\\S+/apps/[^/]+/${page}\\?token=[0-9a-f]{64}`).exec(mail.text);
  if (!m) throw new Error(`no ${page} link in: ${mail.text}`);
  return m[0];
};

/** The service's own address for a link (the mail names the public URL; the test talks to 127.0.0.1). */
export const local = (t: TestService, link: string) => `${t.url}${link.slice(link.indexOf('/apps/'))}`;

/** The n-th link to `page` mailed to `to`, at the service's own address (polled, generous bound). */
export async function mailedLink(t: TestService, to: string, page: string, n = 1): Promise<string> {
  for (let i = 0; i < 500; i++) {
    const mails = (await mailbox(t)).filter((m) => m.to === to);
    if (mails.length >= n) return local(t, linkIn(mails[n - 1]!, page));
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no mail #${n} to ${to}`);
}

/** Mail goes out after the answer: give the background work time before checking absence. */
export const settle = () => new Promise((r) => setTimeout(r, 200));

/** Posts an account page's form (application/x-www-form-urlencoded), as a browser would. */
export function postForm(url: string, fields: Record<string, string>) {
  return fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });
}

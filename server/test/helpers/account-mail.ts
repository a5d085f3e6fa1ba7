import { KEYS, type TestService } from './service.ts';

/** Waits for the reset mail to `to`, then sets `password` through its link (the account page's form). */
export async function spendResetLink(t: TestService, to: string, password: string): Promise<void> {
  let link: string | undefined;
  for (let i = 0; i < 200 && !link; i++) {
    const mails = (await t.request('GET', '/devMailbox', { as: 'master' })).json.results as Array<{
      to: string;
      text: string;
    }>;
    const text = mails.filter((m) => m.to === to).at(-1)?.text;
    link = text && /\/apps\/[^/]+\/reset\?token=([0-9a-f]{64})/.exec(text)?.[1];
    if (!link) await new Promise((r) => setTimeout(r, 25));
  }
  if (!link) throw new Error(`no reset mail to ${to}`);
  const res = await fetch(`${t.url}/apps/${KEYS.appId}/reset`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: link, new_password: password, confirm_password: password }).toString(),
  });
  if (res.status !== 200) throw new Error(`reset answered ${res.status}`);
}

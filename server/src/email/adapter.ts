import type { ServiceOptions } from '../config/options.ts';
import { DevMailbox } from './dev-mailbox.ts';
import type { MailAdapter } from './mail.ts';
import { SmtpMailer } from './smtp.ts';

export function createMailAdapter(options: ServiceOptions): MailAdapter {
  const { email } = options;
  if (email.adapter === 'smtp' && email.smtp) return new SmtpMailer(email.smtp, email.from);
  return new DevMailbox(options.dataDir);
}

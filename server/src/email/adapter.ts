import type { ServiceOptions } from '../config/options.ts';
import { DevMailbox } from './dev-mailbox.ts';
import { SmtpMailer } from './smtp.ts';

/** One outgoing message. */
export interface Mail {
  to: string;
  subject: string;
  text: string;
  html: string;
}

/** Where mail goes: the dev mailbox by default, SMTP in production. */
export interface MailAdapter {
  send(mail: Mail): Promise<void>;
  close?(): Promise<void>;
}

export function createMailAdapter(options: ServiceOptions): MailAdapter {
  const { email } = options;
  if (email.adapter === 'smtp' && email.smtp) return new SmtpMailer(email.smtp, email.from);
  return new DevMailbox(options.dataDir);
}

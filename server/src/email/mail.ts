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

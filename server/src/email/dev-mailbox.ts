import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Mail, MailAdapter } from './mail.ts';

export interface StoredMail extends Mail {
  sentAt: string;
}

/**
 * The development mail adapter: every message is a JSON file in <dataDir>/mailbox, listed (master
 * only) at GET /devMailbox so that tests and the console can read what would have been sent.
 */
export class DevMailbox implements MailAdapter {
  readonly dir: string;

  constructor(dataDir: string) {
    this.dir = path.join(dataDir, 'mailbox');
  }

  async send(mail: Mail): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const sentAt = new Date().toISOString();
    const name = `${sentAt.replace(/[:.]/g, '-')}-${randomBytes(4).toString('hex')}.json`;
    const stored: StoredMail = {
      to: mail.to,
      subject: mail.subject,
      text: mail.text,
      html: mail.html,
      sentAt,
    };
    await writeFile(path.join(this.dir, name), `${JSON.stringify(stored, null, 2)}\n`, { mode: 0o600 });
  }
}

/** The mails in <dataDir>/mailbox, oldest first (an absent mailbox is empty). */
export async function listDevMailbox(dataDir: string): Promise<StoredMail[]> {
  const dir = path.join(dataDir, 'mailbox');
  let names: string[];
  try {
    names = (await readdir(dir)).filter((n) => n.endsWith('.json')).sort();
  } catch {
    return [];
  }
  const mails: StoredMail[] = [];
  for (const name of names) {
    try {
      mails.push(JSON.parse(await readFile(path.join(dir, name), 'utf8')) as StoredMail);
    } catch {
      // A file being written or not ours: skipped.
    }
  }
  return mails.sort((a, b) => a.sentAt.localeCompare(b.sentAt));
}

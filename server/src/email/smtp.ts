import nodemailer, { type Transporter } from 'nodemailer';
import type { ServiceOptions } from '../config/options.ts';
import type { Mail, MailAdapter } from './mail.ts';

type SmtpOptions = NonNullable<ServiceOptions['email']['smtp']>;

/** Sends mail through an SMTP server with nodemailer. */
export class SmtpMailer implements MailAdapter {
  private readonly transport: Transporter;

  constructor(
    smtp: SmtpOptions,
    private readonly from: string,
  ) {
    this.transport = nodemailer.createTransport({
      host: smtp.host,
      port: smtp.port,
      secure: smtp.secure,
      ignoreTLS: smtp.ignoreTLS,
      auth: smtp.auth,
    });
  }

  async send(mail: Mail): Promise<void> {
    await this.transport.sendMail({
      from: this.from,
      to: mail.to,
      subject: mail.subject,
      text: mail.text,
      html: mail.html,
    });
  }

  async close(): Promise<void> {
    this.transport.close();
  }
}

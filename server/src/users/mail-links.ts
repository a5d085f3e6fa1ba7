import { isObject } from '@bds/client/protocol';
import type { Core } from '../data/core.ts';
import type { Data } from '../data/data.ts';
import type { MailAdapter } from '../email/mail.ts';
import type { Ctx } from '../kernel/context.ts';
import { BdsError, ErrorCode } from '../kernel/errors.ts';
import type { BackgroundWork } from './background.ts';
import type { Lockout } from './lockout.ts';
import { hashPassword } from './passwords.ts';
import type { Sessions } from './sessions.ts';
import {
  COL,
  escapeHtml,
  expiresIn,
  isEmailAddress,
  newOneTimeToken,
  SYSTEM,
  tokenDigest,
} from './shared.ts';
import type { UserRows } from './user-rows.ts';

/** The two kinds of one-time link a user is mailed. */
export type LinkKind = 'reset' | 'verify';

/** The internal columns of each kind of link: the token's digest and its expiry. */
const LINK_COLUMNS: Record<LinkKind, [token: string, expires: string]> = {
  reset: [COL.resetToken, COL.resetExpires],
  verify: [COL.verifyToken, COL.verifyExpires],
};

/** The `email` of a request for a mail, checked and lowercased. */
function emailParam(body: unknown): string {
  const email = isObject(body) ? body.email : undefined;
  if (email === undefined || email === null || email === '') {
    throw new BdsError(ErrorCode.EMAIL_MISSING, 'you must provide an email');
  }
  if (!isEmailAddress(email)) {
    throw new BdsError(ErrorCode.INVALID_EMAIL_ADDRESS, 'Email address format is invalid.');
  }
  return email.toLowerCase();
}

/**
 * Mail-based flows: password reset and email verification links, mailed after the answer
 * (docs/protocol.md#users-and-sessions), and what opening a link does (the account pages).
 */
export class MailLinks {
  private readonly core: Core;

  constructor(
    private readonly data: Data,
    private readonly rows: UserRows,
    private readonly sessions: Sessions,
    private readonly background: BackgroundWork,
    private readonly lockout: Lockout,
    private readonly mailer: MailAdapter,
    private readonly publicUrl: () => string,
  ) {
    this.core = data.core;
  }

  /** A new link token of `kind`, and the internal columns that store its digest and expiry. */
  mintToken(kind: LinkKind): { token: string; columns: Record<string, string> } {
    const token = newOneTimeToken();
    const validity =
      kind === 'reset'
        ? this.core.options.passwordResetTokenValidity
        : this.core.options.emailVerifyTokenValidity;
    const [tokenColumn, expiresColumn] = LINK_COLUMNS[kind];
    return { token, columns: { [tokenColumn]: tokenDigest(token), [expiresColumn]: expiresIn(validity) } };
  }

  /** Mails the verification link of `token` after the answer (a sign-up's or an email change's). */
  mailVerificationLink(email: string, username: string, token: string): void {
    this.background.run(() => this.sendVerificationMail(email, username, token));
  }

  private appPageUrl(page: string, token: string): string {
    const appId = encodeURIComponent(this.core.options.appId);
    return `${this.publicUrl()}/apps/${appId}/${page}?token=${token}`;
  }

  private async sendVerificationMail(email: string, username: string, token: string): Promise<void> {
    const link = this.appPageUrl('verify_email', token);
    await this.mailer.send({
      to: email,
      subject: `Please verify your email for ${this.core.options.appId}`,
      text: `Hi ${username},\n\nConfirm your email address by opening this link:\n${link}\n`,
      html: `<p>Hi ${escapeHtml(username)},</p><p>Confirm your email address: <a href="${escapeHtml(link)}">verify my email</a></p>`,
    });
  }

  /**
   * POST /requestPasswordReset: always `{}`; the work (and the mail) happens after the answer. A
   * beforePasswordResetRequest trigger that refuses (docs/cloud.md) stops the mail.
   */
  requestPasswordReset(body: unknown, ctx: Ctx): Record<string, never> {
    const email = emailParam(body);
    this.background.run(async () => {
      const row = (await this.data.lookups.internal('_User', 'email', email, []))[0];
      if (!row) return;
      const triggers = this.core.hooks.account;
      if (!triggers.isEmpty) {
        const user = await this.data.lookups.userById(row.objectId as string);
        if (!user) return;
        const { password: _password, ...fields } = user;
        try {
          await triggers.beforePasswordResetRequest(ctx, fields);
        } catch (err) {
          this.core.log.info(
            { err: err instanceof Error ? err.message : 'refused' },
            'a beforePasswordResetRequest trigger refused a password reset: no mail sent',
          );
          return;
        }
      }
      const { token, columns } = this.mintToken('reset');
      await this.rows.writeInternal(row.objectId as string, columns);
      const link = this.appPageUrl('reset', token);
      await this.mailer.send({
        to: email,
        subject: `Password reset for ${this.core.options.appId}`,
        text: `Someone asked to reset the password of your account.\n\nSet a new password here (the link works once and expires):\n${link}\n\nIf it was not you, ignore this mail.\n`,
        html: `<p>Someone asked to reset the password of your account.</p><p><a href="${escapeHtml(link)}">Set a new password</a> (the link works once and expires).</p><p>If it was not you, ignore this mail.</p>`,
      });
    });
    return {};
  }

  /** POST /verificationEmailRequest: always `{}`; mails a new link to an unverified address. */
  requestVerificationEmail(body: unknown): Record<string, never> {
    const email = emailParam(body);
    this.background.run(async () => {
      const found = await this.data.lookups.internal('_User', 'email', email, []);
      if (!found[0]) return;
      const userId = found[0].objectId as string;
      const row = await this.data.lookups.userById(userId);
      if (!row || row.emailVerified === true) return;
      const { token, columns } = this.mintToken('verify');
      await this.rows.writeInternal(userId, columns);
      await this.sendVerificationMail(email, row.username as string, token);
    });
    return {};
  }

  /** The user a one-time token (reset or verify) belongs to, when it is known and not expired. */
  async userForToken(
    kind: LinkKind,
    token: string,
  ): Promise<{ objectId: string; digest: string } | undefined> {
    if (!/^[0-9a-f]{64}$/.test(token)) return undefined;
    const [tokenColumn, expiresColumn] = LINK_COLUMNS[kind];
    const digest = tokenDigest(token);
    const row = (await this.data.lookups.internal('_User', tokenColumn, digest, [expiresColumn]))[0];
    if (!row) return undefined;
    const expires = Date.parse(String(row[expiresColumn]));
    if (!Number.isFinite(expires) || expires <= Date.now()) return undefined;
    return { objectId: row.objectId as string, digest };
  }

  /** Sets a new password from a reset link: single use; every session of the user ends. */
  async resetPassword(token: string, password: string): Promise<boolean> {
    const user = await this.userForToken('reset', token);
    if (!user) return false;
    const hash = await hashPassword(password, this.core.options.passwordHashCost);
    return this.core.store.transaction(async () => {
      const done = await this.rows.writeInternal(
        user.objectId,
        { [COL.hash]: hash, [COL.resetToken]: null, [COL.resetExpires]: null },
        { [COL.resetToken]: user.digest },
      );
      if (!done) return false;
      if (this.core.options.revokeSessionOnPasswordReset) await this.sessions.revoke(user.objectId);
      await this.lockout.succeed(`user:${user.objectId}`);
      return true;
    });
  }

  /** Marks the email of a verification link's user verified: single use. */
  async verifyEmail(token: string): Promise<boolean> {
    const user = await this.userForToken('verify', token);
    if (!user) return false;
    try {
      await this.data.writes.update(
        SYSTEM,
        '_User',
        user.objectId,
        { emailVerified: true },
        {
          internal: { [COL.verifyToken]: null, [COL.verifyExpires]: null },
          expectInternal: { [COL.verifyToken]: user.digest },
        },
      );
      return true;
    } catch (err) {
      if (err instanceof BdsError && err.code === ErrorCode.OBJECT_NOT_FOUND) return false;
      throw err;
    }
  }
}

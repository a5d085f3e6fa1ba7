import { createPublicKey, type JsonWebKey } from 'node:crypto';
import { AUTH_PROVIDER_NAME_PATTERN } from '@bds/client/protocol';
import { z } from 'zod';
import { secret } from './option-values.ts';

/** Signature algorithms an ID token may use (public-key ones only: the service holds no shared secret). */
export const ID_TOKEN_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
] as const;

/** Members of a JWK that hold private or symmetric key material (RFC 7518, section 6). */
const PRIVATE_JWK_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];

/**
 * A public key and nothing more: a PEM text of public key blocks only (no private block beside
 * them), or a JWK without private members. A public key is derived from private material too, so
 * the check refuses that material rather than trusting what derives from it.
 */
function isPublicKey(key: string | Record<string, unknown>): boolean {
  try {
    if (typeof key === 'string') {
      return (
        /-----BEGIN (RSA )?PUBLIC KEY-----/.test(key) &&
        !/PRIVATE|ENCRYPTED/.test(key) &&
        createPublicKey(key).type === 'public'
      );
    }
    return (
      !PRIVATE_JWK_MEMBERS.some((member) => member in key) &&
      createPublicKey({ key: key as JsonWebKey, format: 'jwk' }).type === 'public'
    );
  } catch {
    return false;
  }
}

const oneOrMore = z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]);

/**
 * A sign-in provider built in: OpenID Connect ID tokens (JWT) checked offline against public keys
 * given here (a JWKS, or PEM keys), for the issuer(s) and audience(s), unexpired, with `sub` equal
 * to the provider id (users/providers.ts).
 */
const idTokenProviderSchema = z
  .object({
    issuer: oneOrMore,
    audience: oneOrMore,
    // Shown by digest only: a PEM text or JWK could carry more than the public key it yields.
    jwks: secret(
      z
        .object({
          keys: z
            .array(z.record(z.string(), z.unknown()).refine(isPublicKey, 'is not a public key (a JWK)'))
            .min(1),
        })
        .strict(),
      'publicKeys',
    ).optional(),
    publicKeys: secret(
      z.array(z.string().refine(isPublicKey, 'is not a public key (PEM)')).min(1),
      'publicKeys',
    ).optional(),
    algorithms: z
      .array(z.enum(ID_TOKEN_ALGORITHMS))
      .min(1)
      .default([...ID_TOKEN_ALGORITHMS]),
  })
  .strict()
  .refine((p) => (p.jwks === undefined) !== (p.publicKeys === undefined), {
    message: 'needs jwks or publicKeys (one of them)',
  });

/** Why `name` cannot name a sign-in provider (a key of `authData` besides the built-in ones), or undefined. */
export function providerNameProblem(name: string): string | undefined {
  if (name === 'anonymous') return 'anonymous is built in';
  if (name === 'mfa') return 'mfa is the second factor (authData.mfa), not a provider';
  if (!AUTH_PROVIDER_NAME_PATTERN.test(name))
    return 'a provider name is a letter, then letters, digits or _ (64 at most)';
  return undefined;
}

/** Sign-in providers by name (`auth`). */
export const authSchema = z.record(z.string(), idTokenProviderSchema).superRefine((providers, ctx) => {
  for (const name of Object.keys(providers)) {
    const problem = providerNameProblem(name);
    if (problem) ctx.addIssue({ code: 'custom', path: [name], message: problem });
  }
});

/** Locking a name out after failed logins (`accountLockout`). */
export const accountLockoutSchema = z
  .object({
    threshold: z.number().int().min(1).max(1000).describe('Failed logins for one name before it is locked.'),
    duration: z.number().int().min(1).describe('Seconds a locked name stays locked.'),
  })
  .strict();

/** Outgoing mail (`email`). */
export const emailSchema = z
  .object({
    adapter: z
      .enum(['dev', 'smtp'])
      .default('dev')
      .describe('`dev` (a mailbox in <dataDir>/mailbox) or `smtp`.'),
    from: z.string().min(3).default('no-reply@localhost').describe('The sender of every mail.'),
    smtp: z
      .object({
        host: z.string().min(1).describe('The SMTP server.'),
        port: z.number().int().min(1).max(65535).default(587).describe('Its port.'),
        secure: z
          .boolean()
          .default(false)
          .describe('TLS from the start (port 465); else STARTTLS when offered.'),
        auth: secret(z.object({ user: z.string(), pass: z.string() }).strict())
          .optional()
          .describe('The SMTP login (user and pass).'),
        ignoreTLS: z.boolean().default(false).describe('Never upgrade the connection to TLS.'),
      })
      .strict()
      .optional()
      .describe('The SMTP server, for the `smtp` adapter.'),
  })
  .strict()
  .refine((e) => e.adapter !== 'smtp' || e.smtp !== undefined, {
    message: 'the smtp adapter needs email.smtp.host',
  });

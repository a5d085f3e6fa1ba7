import { createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import { decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';
import { OptionError, providerNameProblem, type ServiceOptions } from '../config/options.ts';
import type { Caller } from '../kernel/caller.ts';
import { BdsError, ErrorCode } from '../kernel/errors.ts';
import type { Row } from '../kernel/records.ts';

/**
 * Sign-in providers: what proves that an `authData.<provider>` payload belongs to whoever sends
 * it. `anonymous` is built in (users/sign-up.ts); the others are OpenID ID-token providers
 * configured by the option `auth`, or adapters a cloud module registers with
 * `cloud.authProvider(name, {validate})`. A provider that is neither answers 252.
 */

/** Which step of a payload's life a check is for (the incumbent's adapter method names). */
export type ProviderStep = 'validateSetUp' | 'validateLogin' | 'validateUpdate';

/** What a check is told besides the payload. */
export interface ProviderCall {
  step: ProviderStep;
  /** Who sends the payload (anonymous for a sign-in). */
  caller: Caller;
  /** The user the payload is (or is being) linked to, without password; undefined at sign-up. */
  user: Row | undefined;
  ip: string | null;
}

/** One provider's check: resolves when the payload proves its `id`, throws a BdsError otherwise. */
export interface ProviderCheck {
  validate(authData: Record<string, unknown>, call: ProviderCall): Promise<void>;
}

export const unsupportedService = (): BdsError =>
  new BdsError(ErrorCode.UNSUPPORTED_SERVICE, 'This authentication method is unsupported.');

/** The configured providers: the option `auth` and the cloud module's registrations. */
export class AuthProviders {
  private readonly checks = new Map<string, ProviderCheck>();

  constructor(options: ServiceOptions['auth'], registered: ReadonlyMap<string, ProviderCheck> = new Map()) {
    for (const [name, config] of Object.entries(options)) this.checks.set(name, idTokenCheck(config));
    for (const [name, check] of registered) {
      if (this.checks.has(name)) {
        throw new OptionError(
          `auth.${name}`,
          `the provider ${name} is also registered by cloud.authProvider; keep one of them`,
        );
      }
      this.checks.set(name, check);
    }
  }

  has(provider: string): boolean {
    return this.checks.has(provider);
  }

  /** Checks a payload with its provider's check; 252 when the provider is not configured. */
  async validate(provider: string, authData: Record<string, unknown>, call: ProviderCall): Promise<void> {
    const check = this.checks.get(provider);
    if (!check) throw unsupportedService();
    await check.validate(authData, call);
  }

  /**
   * Checks each payload with its provider, in the order of the providers' names, at `step` (or the
   * step `step` names for a provider). The master key's payloads are trusted, as all its writes are.
   * The provider sees the user without its password and authData.
   */
  async checkPayloads(
    auth: Caller,
    payloads: Iterable<[string, Record<string, unknown>]>,
    step: ProviderStep | ((provider: string) => ProviderStep),
    user: Row | undefined,
    ip: string | null,
  ): Promise<void> {
    if (auth.isMaster) return;
    const { password: _password, authData: _authData, ...visible } = user ?? {};
    for (const [provider, payload] of [...payloads].sort(([a], [b]) => (a < b ? -1 : 1))) {
      await this.validate(provider, payload, {
        step: typeof step === 'function' ? step(provider) : step,
        caller: auth,
        user: user ? visible : undefined,
        ip,
      });
    }
  }
}

/**
 * `authData.<provider>` as a payload to link: an object whose `id` is a non-empty string (the
 * provider's id of the user, how a sign-in finds the user). The provider name follows the one rule.
 */
export function providerPayload(provider: string, value: unknown): Record<string, unknown> {
  if (providerNameProblem(provider)) throw unsupportedService();
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new BdsError(ErrorCode.INCORRECT_TYPE, `authData.${provider} must be an object.`);
  }
  const payload = value as Record<string, unknown>;
  const id = payload.id;
  if (typeof id !== 'string' || id === '' || id.length > 512) {
    throw new BdsError(ErrorCode.INVALID_VALUE, `Invalid authData id for provider '${provider}'.`);
  }
  return payload;
}

// -----------------------------------------------------------------------------------------------
// OpenID ID tokens, checked offline

type IdTokenConfig = ServiceOptions['auth'][string];

/** Clock skew allowed between the provider and the service when checking exp and nbf. */
const CLOCK_TOLERANCE_SECONDS = 5;
/** A longer token is not an ID token (and is not parsed). */
const MAX_TOKEN_LENGTH = 16 * 1024;

const invalid = (message: string) => new BdsError(ErrorCode.OBJECT_NOT_FOUND, message);

const list = (value: string | string[]) => (Array.isArray(value) ? value : [value]);

/**
 * The check of an ID-token provider: `authData.id_token` (or `authData.token`, as Apple's SDKs
 * send it) is a JWT signed by one of the configured keys with an allowed algorithm, issued by a
 * configured issuer for a configured audience, unexpired, whose `sub` is `authData.id`. Each
 * refusal answers 101 with the incumbent's text.
 */
export function idTokenCheck(config: IdTokenConfig): ProviderCheck {
  const keys: Array<{ kid: string | undefined; key: KeyObject }> = config.jwks
    ? config.jwks.keys.map((jwk) => ({
        kid: typeof jwk.kid === 'string' ? jwk.kid : undefined,
        key: createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' }),
      }))
    : (config.publicKeys ?? []).map((pem) => ({ kid: undefined, key: createPublicKey(pem) }));
  const issuers = list(config.issuer);
  const audiences = list(config.audience);
  const algorithms: string[] = config.algorithms;

  return {
    async validate(authData) {
      const token = typeof authData.id_token === 'string' ? authData.id_token : authData.token;
      if (typeof token !== 'string' || token === '') throw invalid('id token is invalid for this user.');
      let header: { alg?: unknown; kid?: unknown };
      try {
        if (token.length > MAX_TOKEN_LENGTH) throw new Error('too long');
        header = decodeProtectedHeader(token);
      } catch {
        throw invalid('jwt malformed');
      }
      if (typeof header.alg !== 'string' || !algorithms.includes(header.alg))
        throw invalid('invalid algorithm');
      const kid = typeof header.kid === 'string' ? header.kid : undefined;
      const candidates = kid === undefined ? keys : keys.filter((k) => k.kid === undefined || k.kid === kid);
      if (candidates.length === 0) throw invalid(`Unable to find matching key for Key ID: ${kid}`);
      for (const { key } of candidates) {
        let sub: unknown;
        try {
          ({
            payload: { sub },
          } = await jwtVerify(token, key, {
            issuer: issuers,
            audience: audiences,
            algorithms,
            requiredClaims: ['exp', 'sub'],
            clockTolerance: CLOCK_TOLERANCE_SECONDS,
          }));
        } catch (err) {
          const refusal = claimRefusal(err, token, issuers, audiences);
          if (refusal) throw refusal;
          continue; // this key does not verify the signature: the next one may
        }
        if (sub !== authData.id) throw invalid('auth data is invalid for this user.');
        return;
      }
      throw invalid('invalid signature');
    },
  };
}

/**
 * The refusal for an error of jose's that is about the token itself (its form or its claims, which
 * jose checks once a key verified the signature); undefined when the key did not verify it.
 */
function claimRefusal(
  err: unknown,
  token: string,
  issuers: string[],
  audiences: string[],
): BdsError | undefined {
  const { code, claim } = (err ?? {}) as { code?: unknown; claim?: unknown };
  switch (code) {
    case 'ERR_JWS_INVALID':
    case 'ERR_JWT_INVALID':
      return invalid('jwt malformed');
    case 'ERR_JWT_EXPIRED':
      return invalid('jwt expired');
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
      if (claim === 'iss') {
        const from = String(decodeJwt(token).iss ?? '').slice(0, 200);
        return invalid(
          `id token not issued by correct provider - expected: ${issuers.join(' or ')} | from: ${from}`,
        );
      }
      if (claim === 'aud') return invalid(`jwt audience invalid. expected: ${audiences.join(' or ')}`);
      if (claim === 'nbf') return invalid('jwt not active');
      return invalid('id token is invalid for this user.');
    default:
      return undefined;
  }
}

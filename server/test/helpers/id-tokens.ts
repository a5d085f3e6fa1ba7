import { randomUUID } from 'node:crypto';
import { exportJWK, exportSPKI, generateKeyPair, type JWK, SignJWT } from 'jose';

/** An OpenID provider for tests: its signing key, its public JWKS and PEM, and ID tokens it signs. */
export interface TestIssuer {
  issuer: string;
  audience: string;
  kid: string;
  /** The public keys as a JWKS (`{keys: [...]}`), for the `auth.<provider>.jwks` option. */
  jwks: { keys: JWK[] };
  /** The public key as PEM (SPKI), for the `auth.<provider>.publicKeys` option. */
  publicKeyPem: string;
  /** An ID token for `sub`; `claims` and `header` override the defaults (expiry one hour ahead). */
  token(sub: string, claims?: Record<string, unknown>, header?: Record<string, unknown>): Promise<string>;
}

export async function testIssuer(
  issuer = 'https://issuer.test',
  audience = 'app-client-id',
  alg: 'RS256' | 'ES256' = 'RS256',
): Promise<TestIssuer> {
  const { publicKey, privateKey } = await generateKeyPair(alg, { extractable: true });
  const kid = `kid-${randomUUID().slice(0, 8)}`;
  const jwk = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' };
  return {
    issuer,
    audience,
    kid,
    jwks: { keys: [jwk] },
    publicKeyPem: await exportSPKI(publicKey),
    async token(sub, claims = {}, header = {}) {
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ iss: issuer, aud: audience, sub, iat: now, exp: now + 3600, ...claims })
        .setProtectedHeader({ alg, kid, typ: 'JWT', ...header })
        .sign(privateKey);
    },
  };
}

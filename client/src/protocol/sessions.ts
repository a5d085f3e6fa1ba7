/**
 * The form of a session token (docs/protocol.md#addresses): `r:` and 32 lowercase hex digits, 16
 * random bytes. The service makes them at sign-up and login; the bff makes the short sessions it
 * runs a function or a realtime inspection as. Both draw the bytes and write them here.
 */
export const SESSION_TOKEN_PREFIX = 'r:';
export const SESSION_TOKEN_BYTES = 16;

/** A session token from SESSION_TOKEN_BYTES random bytes (the caller draws them from its CSPRNG). */
export function sessionTokenOf(random: Uint8Array): string {
  if (random.length !== SESSION_TOKEN_BYTES) {
    throw new RangeError(`A session token takes ${SESSION_TOKEN_BYTES} random bytes.`);
  }
  let hex = '';
  for (const byte of random) hex += byte.toString(16).padStart(2, '0');
  return SESSION_TOKEN_PREFIX + hex;
}

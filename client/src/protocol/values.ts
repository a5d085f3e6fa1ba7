/** A plain JSON object (not an array, not null). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A date-time as the service writes and takes it in `createdAt` and `updatedAt` (an import, a
 * master write): ISO 8601 in UTC, seconds, up to six digits of fraction (docs/protocol.md#addresses).
 */
export const ISO_DATE_PATTERN = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/;

/** Standard base64, padded or not (Bytes values, uploads in the SDKs' JSON form, export files). */
export const BASE64_PATTERN = /^[A-Za-z0-9+/]*={0,2}$/;

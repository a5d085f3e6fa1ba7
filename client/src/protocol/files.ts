/**
 * Files: what a File value may name, and how a stored file is served. The service (uploads, write
 * validation, downloads), the client library, the bff and the console all use these; nobody keeps
 * a copy. A File value names a file the service stored, by the name the service issued for it:
 * anything else (a url, a path, a name the caller made up) is refused on write and never fetched.
 */

/** A name a file may be uploaded under (`POST /files/<name>`). */
export const UPLOAD_NAME = /^[_a-zA-Z0-9][a-zA-Z0-9@. ~_-]*$/;
export const MAX_UPLOAD_NAME = 128;

/**
 * A name the upload accepts, made from any file's name (a browser's `File.name`): characters it
 * does not take become `_`, the end of a long name is kept (its extension), and a name that would
 * start with a dot or a space starts with `_`.
 */
export function toUploadName(name: string): string {
  const cleaned = name.replace(/[^a-zA-Z0-9@. ~_-]/g, '_').slice(-(MAX_UPLOAD_NAME - 1));
  return UPLOAD_NAME.test(cleaned) ? cleaned : `_${cleaned}`;
}

/** What the service puts before an upload name: 32 random lowercase hex digits and `_`. */
const ISSUED_PREFIX = /^[0-9a-f]{32}_/;
const ISSUED_PREFIX_LENGTH = 33;

export function isUploadName(name: unknown): name is string {
  return typeof name === 'string' && name.length <= MAX_UPLOAD_NAME && UPLOAD_NAME.test(name);
}

/** A name the service issues for an upload: `<32 lowercase hex>_<upload name>`. */
export function isIssuedFileName(name: unknown): name is string {
  return (
    typeof name === 'string' && ISSUED_PREFIX.test(name) && isUploadName(name.slice(ISSUED_PREFIX_LENGTH))
  );
}

/** The name a file was uploaded under: an issued name without its random prefix. */
export function uploadNameOf(issued: string): string {
  return ISSUED_PREFIX.test(issued) ? issued.slice(ISSUED_PREFIX_LENGTH) : issued;
}

/** How many characters of a refused name an error text shows. */
const SHOWN_NAME = 100;

function shown(name: string): string {
  return name.length > SHOWN_NAME ? `${JSON.stringify(name.slice(0, SHOWN_NAME))}…` : JSON.stringify(name);
}

/**
 * The refusal of a name that is not an issued one: on write (`field` given) it names the field;
 * on download it names the file only.
 */
export function foreignFileNameText(name: string, field?: string): string {
  return field === undefined
    ? `${shown(name)} is not the name of a file stored by this service.`
    : `${field} must name a file stored by this service (upload it with POST /files/<name>); ${shown(name)} is not one.`;
}

/**
 * A stored file's content type: the media type's essence in lower case, or
 * `application/octet-stream` when it is not a well-formed type.
 */
export function fileContentType(raw: string | null | undefined): string {
  const essence = String(raw ?? '')
    .split(';')[0]!
    .trim()
    .toLowerCase();
  return /^[\w.+-]+\/[\w.+-]+$/.test(essence) ? essence : 'application/octet-stream';
}

/** The only types served inline: images a browser shows in an `<img>` and never runs (no SVG). */
export const INLINE_IMAGE_TYPES: ReadonlySet<string> = new Set([
  'image/png',
  'image/jpeg',
  'image/gif',
  'image/webp',
  'image/avif',
  'image/bmp',
  'image/x-icon',
  'image/vnd.microsoft.icon',
]);

/** Names whose extension says they hold one of the inline image types (the console's thumbnails). */
const IMAGE_EXTENSION = /\.(png|jpe?g|gif|webp|avif|bmp|ico)$/i;

/** An issued name whose extension says image: the console may show it as an `<img>` thumbnail. */
export function isImageFileName(name: unknown): name is string {
  return isIssuedFileName(name) && IMAGE_EXTENSION.test(name);
}

/**
 * Types a page would run or apply when it loads them as a subresource (`<script>`, a worker,
 * `<link rel=stylesheet>`, WebAssembly): the JavaScript MIME types of the WHATWG MIME Sniffing
 * standard, CSS and wasm. With `nosniff` a browser refuses to run any other type, so a stored file
 * of these types is served as `application/octet-stream`.
 */
const RUNNABLE_TYPES: ReadonlySet<string> = new Set([
  'application/ecmascript',
  'application/javascript',
  'application/x-ecmascript',
  'application/x-javascript',
  'text/ecmascript',
  'text/javascript',
  'text/javascript1.0',
  'text/javascript1.1',
  'text/javascript1.2',
  'text/javascript1.3',
  'text/javascript1.4',
  'text/javascript1.5',
  'text/jscript',
  'text/livescript',
  'text/x-ecmascript',
  'text/x-javascript',
  'text/css',
  'application/wasm',
]);

/** RFC 8187 `filename*` value: UTF-8, percent-encoded beyond the attribute characters. */
function extendedFilename(name: string): string {
  return `UTF-8''${encodeURIComponent(name).replace(/['()*!]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`;
}

/**
 * The headers that make serving a stored file safe on any origin: never sniffed, never a page
 * that runs anything (`sandbox`), images of the allowlist inline, everything else a download under
 * the name it was uploaded with, and never with a type a page would run as script or style.
 */
export function storedFileHeaders(
  contentType: string | null | undefined,
  name: string,
): Record<string, string> {
  const type = fileContentType(contentType);
  const safety = {
    'X-Content-Type-Options': 'nosniff',
    'Content-Security-Policy': "default-src 'none'; sandbox",
  };
  if (INLINE_IMAGE_TYPES.has(type)) return { 'Content-Type': type, ...safety };
  return {
    'Content-Type': RUNNABLE_TYPES.has(type) ? 'application/octet-stream' : type,
    ...safety,
    'Content-Disposition': `attachment; filename*=${extendedFilename(uploadNameOf(name))}`,
  };
}

/**
 * What a stored file keeps besides its bytes, as its uploader gave them (the stock Parse SDKs'
 * `metadata` and `tags`): each a flat map of strings, at most `keys` keys of 1 to `keyBytes`
 * bytes, each value at most `valueBytes` bytes (UTF-8).
 */
export const FILE_DATA_LIMITS = { keys: 64, keyBytes: 128, valueBytes: 1024 } as const;

export type FileStrings = Record<string, string>;

const utf8Length = (text: string) => new TextEncoder().encode(text).length;

/** What is wrong with a file's metadata or tags (`label`), or `undefined` when they may be kept. */
export function fileDataProblem(label: 'metadata' | 'tags', value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return `File ${label} must be a JSON object of strings.`;
  }
  const entries = Object.entries(value);
  if (entries.length > FILE_DATA_LIMITS.keys) {
    return `File ${label} has ${entries.length} keys; a file keeps at most ${FILE_DATA_LIMITS.keys}.`;
  }
  for (const [key, text] of entries) {
    // JSON.parse makes `__proto__` an own key, which code that copies objects may turn into a prototype.
    if (key === '__proto__') return `File ${label} may not hold a key named __proto__.`;
    if (key.length === 0 || utf8Length(key) > FILE_DATA_LIMITS.keyBytes) {
      return `File ${label} keys must be 1 to ${FILE_DATA_LIMITS.keyBytes} bytes long.`;
    }
    if (typeof text !== 'string')
      return `File ${label} values must be strings; ${JSON.stringify(key)} is not.`;
    const bytes = utf8Length(text);
    if (bytes > FILE_DATA_LIMITS.valueBytes) {
      return `File ${label} values must be at most ${FILE_DATA_LIMITS.valueBytes} bytes; ${JSON.stringify(key)} has ${bytes}.`;
    }
  }
  return undefined;
}

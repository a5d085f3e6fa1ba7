import { createHash } from 'node:crypto';
import { BdsError, ErrorCode } from '../kernel/errors.ts';

import type { StoredFile } from '../storage/adapter.ts';

export type { StoredFile } from '../storage/adapter.ts';

/** What an uploader described a file with, checked (`@bds/client/protocol` fileDataProblem). */
export type FileData = Pick<StoredFile, 'metadata' | 'tags'>;

export const NO_FILE_DATA: FileData = Object.freeze({ metadata: {}, tags: {} });

/**
 * Where file bytes live. Both adapters stream: bytes pass through in chunks, never as a whole.
 * `save` keeps nothing when the source fails or exceeds the limit. Its `createdAt` defaults to now
 * (an import, transfer/, keeps the exported one); the file's metadata and tags are kept with it.
 */
export interface FileAdapter {
  save(
    name: string,
    contentType: string,
    source: AsyncIterable<Uint8Array>,
    limit: number,
    createdAt?: string,
    fileData?: FileData,
  ): Promise<StoredFile>;
  info(name: string): Promise<StoredFile | undefined>;
  /** The bytes from `start` to `end`, both included. */
  read(file: StoredFile, start: number, end: number): AsyncIterable<Uint8Array>;
  /** Whether a file was there to delete. */
  delete(name: string): Promise<boolean>;
  /** Every stored file, in name order. */
  list(): AsyncIterable<StoredFile>;
}

export function fileTooLarge(limit: number): BdsError {
  return new BdsError(
    ErrorCode.FILE_SAVE_ERROR,
    `The file is larger than the maximum upload size of ${limit} bytes.`,
    413,
  );
}

/**
 * Passes the chunks of `source` through, counting and hashing them; throws `fileTooLarge` as soon
 * as more than `limit` bytes arrive. `result()` answers the size and ETag once the source ended.
 */
export function measured(source: AsyncIterable<Uint8Array>, limit: number) {
  const hash = createHash('sha256');
  let size = 0;
  async function* chunks(): AsyncIterable<Uint8Array> {
    for await (const chunk of source) {
      size += chunk.byteLength;
      if (size > limit) throw fileTooLarge(limit);
      hash.update(chunk);
      yield chunk;
    }
  }
  return {
    chunks: chunks(),
    result: () => ({ size, etag: `"${hash.digest('base64url')}"` }),
  };
}

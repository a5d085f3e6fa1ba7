import type { FileBlobs } from '../data/files.ts';
import { type FileAdapter, type FileData, measured, NO_FILE_DATA, type StoredFile } from './adapter.ts';

/** Bytes per stored chunk. */
export const CHUNK_SIZE = 256 * 1024;

/**
 * Files in the database itself, in chunks of 256 KiB (so several service instances can share
 * them). A file becomes visible once its last chunk is written; a failed upload leaves nothing.
 */
export class DatabaseFileAdapter implements FileAdapter {
  constructor(private readonly blobs: FileBlobs) {}

  async save(
    name: string,
    contentType: string,
    source: AsyncIterable<Uint8Array>,
    limit: number,
    createdAt = new Date().toISOString(),
    { metadata, tags }: FileData = NO_FILE_DATA,
  ): Promise<StoredFile> {
    await this.blobs.begin({ name, contentType, createdAt, metadata, tags });
    const counted = measured(source, limit);
    try {
      let seq = 0;
      let pending: Uint8Array[] = [];
      let pendingSize = 0;
      const flush = async () => {
        if (pendingSize === 0) return;
        await this.blobs.append(name, seq++, Buffer.concat(pending, pendingSize));
        pending = [];
        pendingSize = 0;
      };
      for await (const chunk of counted.chunks) {
        let offset = 0;
        while (offset < chunk.byteLength) {
          const take = Math.min(CHUNK_SIZE - pendingSize, chunk.byteLength - offset);
          pending.push(chunk.subarray(offset, offset + take));
          pendingSize += take;
          offset += take;
          if (pendingSize === CHUNK_SIZE) await flush();
        }
      }
      await flush();
      const { size, etag } = counted.result();
      await this.blobs.commit(name, size, etag);
      return { name, contentType, size, etag, createdAt, metadata, tags };
    } catch (err) {
      await this.blobs.delete(name);
      throw err;
    }
  }

  info(name: string): Promise<StoredFile | undefined> {
    return this.blobs.info(name);
  }

  async *read(file: StoredFile, start: number, end: number): AsyncIterable<Uint8Array> {
    for (let seq = Math.floor(start / CHUNK_SIZE); seq * CHUNK_SIZE <= end; seq++) {
      const chunk = await this.blobs.chunk(file.name, seq);
      if (!chunk) return;
      const base = seq * CHUNK_SIZE;
      yield chunk.subarray(Math.max(0, start - base), Math.min(chunk.byteLength, end - base + 1));
    }
  }

  delete(name: string): Promise<boolean> {
    return this.blobs.delete(name);
  }

  async *list(): AsyncIterable<StoredFile> {
    let after = '';
    for (;;) {
      const page = await this.blobs.list(after, 500);
      yield* page;
      if (page.length < 500) return;
      after = page.at(-1)!.name;
    }
  }
}

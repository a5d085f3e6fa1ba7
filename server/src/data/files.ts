import type { StoredFile } from '../storage/adapter.ts';
import type { Core } from './core.ts';

/**
 * File bytes kept in the store (the `database` file adapter, for several service instances sharing
 * one database). Not rows of a class: the chunks go to the store's file methods, and this is the
 * only code that calls them.
 */
export class FileBlobs {
  constructor(private readonly core: Core) {}

  begin(file: Omit<StoredFile, 'size' | 'etag'>): Promise<void> {
    return this.core.store.fileBegin(file);
  }

  append(name: string, seq: number, bytes: Uint8Array): Promise<void> {
    return this.core.store.fileAppend(name, seq, bytes);
  }

  commit(name: string, size: number, etag: string): Promise<void> {
    return this.core.store.fileCommit(name, size, etag);
  }

  info(name: string): Promise<StoredFile | undefined> {
    return this.core.store.fileInfo(name);
  }

  chunk(name: string, seq: number): Promise<Uint8Array | undefined> {
    return this.core.store.fileChunk(name, seq);
  }

  delete(name: string): Promise<boolean> {
    return this.core.store.fileDelete(name);
  }

  list(after: string, limit: number): Promise<StoredFile[]> {
    return this.core.store.fileList(after, limit);
  }
}

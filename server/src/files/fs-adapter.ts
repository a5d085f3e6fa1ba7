import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { randomSecret } from '../kernel/ids.ts';
import { type FileAdapter, type FileData, measured, NO_FILE_DATA, type StoredFile } from './adapter.ts';

/**
 * Files under `<dataDir>/files`: the bytes in `data/<name>`, what is known of them (their metadata
 * and tags included) in `meta/<name>.json`. An upload is written to a temporary file and renamed
 * when complete, so a reader never sees half a file.
 */
export class FsFileAdapter implements FileAdapter {
  private readonly dataDir: string;
  private readonly metaDir: string;
  private readonly tmpDir: string;
  private ready: Promise<void> | undefined;

  constructor(root: string) {
    this.dataDir = path.join(root, 'data');
    this.metaDir = path.join(root, 'meta');
    this.tmpDir = path.join(root, 'tmp');
  }

  private dirs(): Promise<void> {
    this.ready ??= (async () => {
      for (const dir of [this.dataDir, this.metaDir, this.tmpDir]) await mkdir(dir, { recursive: true });
    })();
    return this.ready;
  }

  async save(
    name: string,
    contentType: string,
    source: AsyncIterable<Uint8Array>,
    limit: number,
    createdAt = new Date().toISOString(),
    { metadata, tags }: FileData = NO_FILE_DATA,
  ): Promise<StoredFile> {
    await this.dirs();
    const tmp = path.join(this.tmpDir, randomSecret());
    const counted = measured(source, limit);
    try {
      await pipeline(counted.chunks, createWriteStream(tmp, { flags: 'wx' }));
      const file: StoredFile = {
        name,
        contentType,
        ...counted.result(),
        createdAt,
        metadata,
        tags,
      };
      await writeFile(path.join(this.metaDir, `${name}.json`), JSON.stringify(file));
      await rename(tmp, path.join(this.dataDir, name));
      return file;
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
  }

  async info(name: string): Promise<StoredFile | undefined> {
    let file: StoredFile;
    try {
      file = JSON.parse(await readFile(path.join(this.metaDir, `${name}.json`), 'utf8')) as StoredFile;
    } catch {
      return undefined;
    }
    // Files stored before metadata and tags were kept have neither in their sidecar.
    return { ...file, metadata: file.metadata ?? {}, tags: file.tags ?? {} };
  }

  read(file: StoredFile, start: number, end: number): AsyncIterable<Uint8Array> {
    return createReadStream(path.join(this.dataDir, file.name), { start, end, highWaterMark: 256 * 1024 });
  }

  async delete(name: string): Promise<boolean> {
    const existed = (await this.info(name)) !== undefined;
    await rm(path.join(this.dataDir, name), { force: true });
    await rm(path.join(this.metaDir, `${name}.json`), { force: true });
    return existed;
  }

  async *list(): AsyncIterable<StoredFile> {
    await this.dirs();
    const names = (await readdir(this.metaDir)).filter((n) => n.endsWith('.json')).sort();
    for (const entry of names) {
      const file = await this.info(entry.slice(0, -'.json'.length));
      if (file) yield file;
    }
  }
}

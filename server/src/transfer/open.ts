import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { finished } from 'node:stream/promises';
import type { ServiceOptions } from '../config/options.ts';
import { createCore } from '../data/core.ts';
import { Data } from '../data/data.ts';
import { InProcessEventBus } from '../data/events.ts';
import { createFileAdapter, isStoredName } from '../files/service.ts';
import { createLogger } from '../kernel/log.ts';
import { SchemaRegistry } from '../schema/registry.ts';
import { openStore } from '../storage/open.ts';
import { type ExportOptions, exportApp } from './export.ts';
import type { ExportSummary, TransferFiles } from './format.ts';
import { type FromParseOptions, type FromParseSummary, importFromParse } from './from-parse.ts';
import { type ImportSummary, importApp } from './import.ts';

export interface TransferApp {
  data: Data;
  /** Writes the export to `file` (through `<file>.partial`, renamed once complete). */
  exportTo(file: string, options: ExportOptions): Promise<ExportSummary>;
  importFrom(file: string): Promise<ImportSummary>;
  /** Imports a running parse-server app (from-parse.ts). */
  importFromParse(options: FromParseOptions): Promise<FromParseSummary>;
  close(): Promise<void>;
}

/**
 * The store the options name, opened and migrated as the service opens it, with the data layer
 * over it but nothing served: no HTTP, no cloud code, no jobs or push schedulers (an import runs
 * no triggers, and nothing may send mail or pushes while an app is moved).
 */
export async function openTransfer(
  options: ServiceOptions,
  filesOf: (data: Data) => TransferFiles,
): Promise<TransferApp> {
  const log = createLogger(options.logLevel);
  const store = await openStore(options);
  const schemas = new SchemaRegistry(store);
  await schemas.load();
  const core = createCore({ options, store, schemas, events: new InProcessEventBus(log), log });
  // No trigger runs on an import: nothing is bound.
  core.hooks.seal();
  const data = new Data(core);
  const files = filesOf(data);
  return {
    data,
    exportTo: (file, exportOptions) => exportToFile(data, files, file, exportOptions),
    importFrom: (file) => importApp(data, files, file),
    importFromParse: (fromParse) => importFromParse(data, files, fromParse),
    close: () => store.close(),
  };
}

/** The file adapter the options name, as the export and imports use it. */
export function transferFiles(options: ServiceOptions, data: Data): TransferFiles {
  const adapter = createFileAdapter(options, data);
  return {
    list: () => adapter.list(),
    read: (file, start, end) => adapter.read(file, start, end),
    save: (name, type, source, limit, createdAt, fileData) =>
      adapter.save(name, type, source, limit, createdAt, fileData),
    info: (name) => adapter.info(name),
    delete: (name) => adapter.delete(name),
    validName: isStoredName,
  };
}

export async function exportToFile(
  data: Data,
  files: TransferFiles,
  file: string,
  options: ExportOptions,
): Promise<ExportSummary> {
  const partial = `${file}.partial`;
  const out = createWriteStream(partial);
  try {
    const summary = await exportApp(data, files, out, options);
    out.end();
    await finished(out);
    await rename(partial, file);
    return summary;
  } catch (err) {
    out.destroy();
    await rm(partial, { force: true });
    throw err;
  }
}

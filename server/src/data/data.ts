import { Aggregator } from './aggregate.ts';
import type { Core } from './core.ts';
import { FileBlobs } from './files.ts';
import { Lookups } from './lookups.ts';
import { WritePipeline } from './pipeline.ts';
import { Reads } from './reads.ts';

/** The data layer: record reads, the one write pipeline, and the service's own lookups. */
export class Data {
  readonly reads: Reads;
  readonly writes: WritePipeline;
  readonly lookups: Lookups;
  /** POST /aggregate (master only). */
  readonly aggregate: Aggregator;
  /** File bytes kept in the store (the database file adapter): the one caller of the store's file methods. */
  readonly blobs: FileBlobs;

  constructor(readonly core: Core) {
    this.reads = new Reads(core);
    this.writes = new WritePipeline(core, this.reads);
    this.lookups = new Lookups(core);
    this.aggregate = new Aggregator(core);
    this.blobs = new FileBlobs(core);
  }
}

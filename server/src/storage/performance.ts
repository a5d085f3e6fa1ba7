/**
 * The report of query shapes and automatic indexes (docs/protocol.md#performance); its wire types
 * are the protocol's (client/src/protocol/performance.ts), shared with the console.
 */
import type { AutoIndexReport, ShapeReport } from '@bds/client/protocol';

export type { AutoIndexReport, IndexKey, ShapeReport } from '@bds/client/protocol';

/** What the Performance API asks of the store (server/src/http/routes/performance.ts); SqlStore's is storage/sql/auto-index.ts. */
export interface QueryPerformance {
  report(): { shapes: ShapeReport[]; indexes: AutoIndexReport[] };
  build(shape: string): Promise<AutoIndexReport>;
  drop(name: string): Promise<void>;
  /** One round of decisions: build the indexes the bounds allow, drop the unused ones. */
  tick(): Promise<void>;
}

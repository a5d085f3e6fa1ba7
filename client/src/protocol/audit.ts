/** One entry of the console's audit log (who changed what, with the values before and after). */
export interface AuditEntry {
  id: number;
  /** ISO 8601, UTC. */
  at: string;
  /** The console user who made the change. */
  user: string;
  app: string;
  action: string;
  target: string;
  before: unknown;
  after: unknown;
}

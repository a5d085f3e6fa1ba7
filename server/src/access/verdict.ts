import type { QueryNode } from '../query/ast.ts';

/** Which layer decided (SPEC "What the service does" 4: CLP, then ACL, then protectedFields). */
export type Layer = 'master' | 'system' | 'clp' | 'acl' | 'protectedFields' | 'installation' | 'role';

/**
 * An access decision as data: whether it is allowed, which layer said so and why. A denial
 * carries the protocol error it answers with; an allowance may carry a row condition that the
 * storage layer adds to its SQL (pointer permissions, installation id).
 */
export interface Verdict {
  allowed: boolean;
  layer: Layer;
  /** Protocol error code of a denial. */
  code?: number;
  /** Protocol error text of a denial. */
  message?: string;
  /** HTTP status override of a denial (403 for key/master checks). */
  status?: number;
  /** Human-readable reason, for allowances and denials alike (the console explains with it). */
  reason: string;
  /** Rows the caller may touch must also meet this condition. */
  rowCondition?: QueryNode;
}

export const allow = (layer: Layer, reason: string, rowCondition?: QueryNode): Verdict =>
  rowCondition ? { allowed: true, layer, reason, rowCondition } : { allowed: true, layer, reason };

export const deny = (
  layer: Layer,
  code: number,
  message: string,
  reason: string,
  status?: number,
): Verdict =>
  status === undefined
    ? { allowed: false, layer, code, message, reason }
    : { allowed: false, layer, code, message, reason, status };

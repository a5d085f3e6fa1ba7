import type { QueryNode } from '../kernel/query.ts';

/** Which layer decided (docs/protocol.md#access-control: CLP, then ACL, then protectedFields). */
export type Layer = 'master' | 'system' | 'clp' | 'acl' | 'protectedFields';

/**
 * An access decision as data: whether it is allowed, which layer and which rule said so, and why
 * in words. A denial carries the protocol error it answers with (the data layer turns it into
 * one); an allowance may carry a row condition that every row touched must also meet (pointer
 * permissions, an installation's own row), compiled to SQL or checked in memory like any where.
 */
export interface Verdict {
  allowed: boolean;
  layer: Layer;
  /**
   * The rule that decided, as a stable id: `master`, `system.masterOnly`, `system.installation`,
   * `system.session`, `system.ownAccount`, `system.accountRules`, `clp.noEntry`, `clp.public`, `clp.requiresAuthentication`,
   * `clp.authenticated`, `clp.principal`, `clp.pointer`, `clp.none`, `acl.noAcl`, `acl.grant`,
   * `acl.none`...
   */
  rule: string;
  /** The CLP or ACL entry that matched (`*`, `role:Editors`, a user id, a pointer field), if any. */
  entry?: string;
  /** For a grant through a role: the chain from the role the user is a member of to the granting one. */
  roleChain?: string[];
  /** In plain words, for the console's explanation. */
  reason: string;
  /** Protocol error of a denial. */
  code?: number;
  message?: string;
  /** Rows the caller may touch must also meet this condition. */
  condition?: QueryNode;
}

type Extra = Pick<Verdict, 'entry' | 'roleChain' | 'condition'>;

export const allow = (layer: Layer, rule: string, reason: string, extra: Extra = {}): Verdict => ({
  allowed: true,
  layer,
  rule,
  reason,
  ...extra,
});

export const deny = (
  layer: Layer,
  rule: string,
  code: number,
  message: string,
  reason: string,
  extra: Extra = {},
): Verdict => ({ allowed: false, layer, rule, reason, code, message, ...extra });

/** The rule of a denial that answers 403 `unauthorized: master key is required`. */
export const MASTER_ONLY_RULE = 'system.masterOnly';

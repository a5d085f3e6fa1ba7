/**
 * What deciding one event needs that does not depend on the subscription, computed once per event
 * and caller (callers are shared by the subscriptions of a session): CLP find for the class, whether
 * the row's ACL before and after the change grants read, why a subscription outside the event is
 * filtered, and the rows presented for a frame. The where, the CLP row condition and every frame
 * stay per subscription; the rules themselves are decide.ts's.
 */
import { decideAcl } from '../access/acl.ts';
import { decideClass } from '../access/class.ts';
import type { Caller } from '../kernel/caller.ts';
import type { ClassSchema } from '../kernel/schema.ts';
import type { SchemaRegistry } from '../schema/registry.ts';
import { type EventFacts, reasonOutside } from './decide.ts';
import type { CompiledSubscription } from './model.ts';
import type { LiveEvent } from './retention.ts';
import type { FilterReason } from './trace.ts';

export class EventCache implements EventFacts {
  /** The class's schema when the event's fan-out began. */
  readonly schema: ClassSchema | undefined;
  private readonly find = new Map<Caller, boolean>();
  private readonly readBefore = new Map<Caller, boolean>();
  private readonly readAfter = new Map<Caller, boolean>();
  /** Presented rows (JSON text) by caller, then side and keys; only for subscriptions without include. */
  private readonly presentations = new Map<Caller, Map<string, Promise<string>>>();
  /** The reason outside for subscriptions without a CLP row condition, by caller. */
  private readonly outside = new Map<Caller, FilterReason>();

  constructor(
    private readonly schemas: SchemaRegistry,
    private readonly event: LiveEvent,
  ) {
    this.schema = schemas.get(event.className);
  }

  /**
   * A row of the event presented for a subscription (protectedFields, secrets, keys): what `make`
   * answers, computed once per caller, side and keys when the subscription includes nothing (an
   * include reads other rows, so those are presented for each subscription) and the schema has not
   * moved. A text: every subscriber's frame is its own, nothing is shared that could be mutated.
   */
  presented(
    compiled: CompiledSubscription,
    side: 'before' | 'after',
    make: () => Promise<string>,
  ): Promise<string> {
    const { request, caller } = compiled;
    if (request.include.length > 0 || this.schemas.get(this.event.className) !== this.schema) {
      return make();
    }
    let byCaller = this.presentations.get(caller);
    if (!byCaller) {
      byCaller = new Map();
      this.presentations.set(caller, byCaller);
    }
    const key = request.keys ? `${side}\u0001${request.keys.join('\u0000')}` : side;
    let text = byCaller.get(key);
    if (!text) {
      text = make();
      byCaller.set(key, text);
    }
    return text;
  }

  /** CLP find for the class, with roles and requiresAuthentication (decided again if the schema changed since). */
  findAllowed(caller: Caller): boolean {
    const className = this.event.className;
    const schema = this.schemas.get(className);
    if (schema !== this.schema) return decideClass({ className, schema, op: 'find', caller }).allowed;
    let allowed = this.find.get(caller);
    if (allowed === undefined) {
      allowed = decideClass({ className, schema, op: 'find', caller }).allowed;
      this.find.set(caller, allowed);
    }
    return allowed;
  }

  /** Whether the row's ACL on that side of the change grants the caller read. */
  readable(which: 'before' | 'after', caller: Caller): boolean {
    const cache = which === 'before' ? this.readBefore : this.readAfter;
    let allowed = cache.get(caller);
    if (allowed === undefined) {
      const row = which === 'before' ? this.event.before : this.event.after;
      allowed = decideAcl(row?.ACL as never, caller, 'read').allowed;
      cache.set(caller, allowed);
    }
    return allowed;
  }

  /** Why a subscription whose where matches the row on neither side is filtered (decide.ts reasonOutside). */
  reasonOutsideFor(compiled: CompiledSubscription): FilterReason {
    if (compiled.clpMatcher) return reasonOutside(this, this.event, compiled.caller, compiled.clpMatcher);
    return this.reasonOutsideOf(compiled.caller);
  }

  /** The reason outside of a subscription without a CLP row condition: its caller's alone. */
  reasonOutsideOf(caller: Caller): FilterReason {
    let reason = this.outside.get(caller);
    if (reason === undefined) {
      reason = reasonOutside(this, this.event, caller, null);
      // Decided again rather than cached while the schema moved under the event (findAllowed).
      if (this.schemas.get(this.event.className) === this.schema) this.outside.set(caller, reason);
    }
    return reason;
  }
}

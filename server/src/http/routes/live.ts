import { demandMaster } from '../../data/authorize.ts';
import type { LiveQuery } from '../../live/server.ts';
import { checkClassName } from '../../schema/registry.ts';
import type { Router } from '../router.ts';

/**
 * GET /live/trace/<C> (master only): the realtime delivery trace of a class: for its last events,
 * which subscriptions received each and, for the others, which check filtered it
 * (docs/architecture/realtime.md#delivery-trace).
 * GET /live/retention (master only): the resume window now: its bounds (the options), how many
 * events it keeps, the oldest and the newest (docs/protocol.md#realtime-frames).
 */
export function registerLiveRoutes(router: Router, live: LiveQuery): void {
  router.add('GET', '/live/trace/:className', async (req) => {
    demandMaster(req.ctx.caller, 'liveTrace');
    const className = req.params.className!;
    checkClassName(className);
    const trace = live.traceOf(className);
    return { body: { className, retainedEvents: trace.retainedEvents, results: trace.events } };
  });
  router.add('GET', '/live/retention', async (req) => {
    demandMaster(req.ctx.caller, 'liveWindow');
    return { body: live.resumeWindow() };
  });
}

import { ErrorCode } from '../kernel/errors.ts';
import type { ProviderCheck } from '../users/providers.ts';
import type { Invoker } from './invoke.ts';
import type { CloudRegistry } from './registry.ts';

/**
 * The cloud module's sign-in providers (`cloud.authProvider`) as the account rules' checks. Each
 * runs as any handler does: a handler's request (with `object` the user the payload is linked to
 * and `triggerName` the step), nesting bounded, and whatever it throws answered 141 with its text.
 */
export function cloudProviderChecks(registry: CloudRegistry, invoker: Invoker): Map<string, ProviderCheck> {
  const checks = new Map<string, ProviderCheck>();
  for (const [name, adapter] of registry.authProviders) {
    checks.set(name, {
      async validate(authData, call) {
        const request = await invoker.request(
          { caller: call.caller, context: {}, ip: call.ip },
          { triggerName: call.step, ...(call.user ? { object: { className: '_User', ...call.user } } : {}) },
        );
        // A copy: what the adapter does to it is not what gets stored.
        const payload = structuredClone(authData);
        const run = () =>
          'validate' in adapter
            ? adapter.validate(payload, request)
            : adapter.validateAuthData(payload, {}, request);
        await invoker.run(run, request, ErrorCode.SCRIPT_FAILED);
      },
    });
  }
  return checks;
}

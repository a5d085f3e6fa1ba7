import type { Data } from '../data/data.ts';
import { Webhooks } from '../hooks/webhooks.ts';
import type { Logger } from '../kernel/log.ts';
import type { Redact, TraceSink } from '../kernel/trace.ts';
import type { ProviderCheck } from '../users/providers.ts';
import { cloudProviderChecks } from './auth-providers.ts';
import { Functions } from './functions.ts';
import { Invoker } from './invoke.ts';
import { loadCloudModule } from './load.ts';
import type { ParseCloud } from './parse-compat/load.ts';
import type { InProcessService } from './parse-compat/sdk.ts';
import type { CloudRegistry } from './registry.ts';
import { CloudTriggers } from './triggers.ts';

export type { CloudDefinitions, CloudRequest, DataApi, FunctionRules, Handler } from './registry.ts';

/** Server-side logic: the cloud module's registrations, webhooks, and the triggers they make. */
export class Cloud {
  private constructor(
    readonly registry: CloudRegistry,
    readonly webhooks: Webhooks,
    readonly invoker: Invoker,
    readonly triggers: CloudTriggers,
    readonly functions: Functions,
    /** The module's sign-in providers (`cloud.authProvider`), for the account rules. */
    readonly authProviders: ReadonlyMap<string, ProviderCheck>,
    /** Cloud code written for the incumbent (option `parseCloud`), when loaded. */
    readonly parse: ParseCloud | undefined,
  ) {}

  /** Rate limits the modules' validators ask for, added to the option `rateLimit`'s rules. */
  get rateLimits(): ParseCloud['rateLimits'] {
    return this.parse?.rateLimits ?? [];
  }

  /** Where the `parse` SDK inside handlers sends its calls: the service's router (createService). */
  connect(service: InProcessService): void {
    if (this.parse) this.parse.link.service = service;
  }

  /**
   * Loads the modules (option `cloud`, then option `parseCloud`) and the `_Hooks` rows. The triggers they make are bound into
   * the core's hooks by createService.
   */
  static async start(data: Data, log: Logger, redact: Redact, sink?: TraceSink): Promise<Cloud> {
    const registry = await loadCloudModule(data.core.options.cloud);
    const webhooks = new Webhooks(data, log, (name) => registry.functions.has(name), sink);
    const { options } = data.core;
    // The incumbent's SDK (the `parse` package) is loaded only for a service that names such a module.
    const parse = options.parseCloud
      ? await (await import('./parse-compat/load.ts')).loadParseCloud(
          options.parseCloud,
          registry,
          options,
          webhooks.client,
          log,
        )
      : undefined;
    await webhooks.registry.load();
    // Registered before cloud code defined the name (or by an older version): never called.
    for (const hook of webhooks.registry.listFunctions()) {
      if (registry.functions.has(hook.functionName)) {
        log.warn(
          { functionName: hook.functionName },
          'a function hook has the name of a cloud code function: the cloud code function is called, never the hook',
        );
      }
    }
    const invoker = new Invoker(data, redact, sink);
    const triggers = new CloudTriggers(data, registry, webhooks, invoker, log);
    return new Cloud(
      registry,
      webhooks,
      invoker,
      triggers,
      new Functions(registry, webhooks, invoker),
      cloudProviderChecks(registry, invoker),
      parse,
    );
  }

  /** Stops webhook retries (a pending wait ends, nothing more is sent), then waits for after-triggers. */
  async close(): Promise<void> {
    await this.webhooks.close();
    await this.triggers.idle();
  }
}

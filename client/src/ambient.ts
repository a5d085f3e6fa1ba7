/**
 * Ambient (async-scope-local) state. The implementation is pluggable so that the browser entry
 * carries no Node-only import: `ambient.node.ts` installs an AsyncLocalStorage-backed scope, the
 * browser fallback (`ambient.browser.ts`) a synchronous scope stack.
 */

/**
 * One scope's mutable state. Imperative login/logout change the current scope's slot. The runner
 * knows no record type: the imperative login (objects.ts) stores its `User` here and types the
 * slot as `AmbientSlot`.
 */
export interface ScopeSlot {
  sessionToken?: string;
  user?: unknown;
  cacheTenant?: string;
}

export interface ScopeRunner {
  run<R>(slot: ScopeSlot, fn: () => R): R;
  current(): ScopeSlot | undefined;
}

/** Browser fallback: a scope is active during the synchronous part of `fn` and until its promise settles. */
export function stackRunner(): ScopeRunner {
  const stack: ScopeSlot[] = [];
  return {
    run(slot, fn) {
      stack.push(slot);
      let result: ReturnType<typeof fn>;
      try {
        result = fn();
      } catch (err) {
        stack.splice(stack.lastIndexOf(slot), 1);
        throw err;
      }
      const pop = () => {
        const i = stack.lastIndexOf(slot);
        if (i >= 0) stack.splice(i, 1);
      };
      if (result instanceof Promise) {
        return result.finally(pop) as typeof result;
      }
      pop();
      return result;
    },
    current: () => stack[stack.length - 1],
  };
}

let runner: ScopeRunner = stackRunner();
/** The slot used outside any scope (process-wide, like a main fiber's locals). */
const rootSlot: ScopeSlot = {};

export function installScopeRunner(r: ScopeRunner): void {
  runner = r;
}

export function currentSlot(): ScopeSlot {
  return runner.current() ?? rootSlot;
}

/** Runs `fn` in a child scope whose slot starts as a copy of the current one plus `patch`. */
export function runScoped<R>(patch: ScopeSlot, fn: () => R): R {
  return runner.run({ ...currentSlot(), ...patch }, fn);
}

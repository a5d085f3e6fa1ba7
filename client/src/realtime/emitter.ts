/** A tiny typed emitter: a throwing handler never breaks the stream of the others. */
export class Emitter<E extends { [K in keyof E]: (...args: any[]) => void }> {
  private readonly handlers = new Map<keyof E, Set<E[keyof E]>>();

  on<K extends keyof E>(event: K, fn: E[K]): this {
    let set = this.handlers.get(event);
    if (!set) {
      set = new Set();
      this.handlers.set(event, set);
    }
    set.add(fn);
    return this;
  }

  once<K extends keyof E>(event: K, fn: E[K]): this {
    const wrapper = ((...args: Parameters<E[K]>) => {
      this.off(event, wrapper);
      fn(...args);
    }) as E[K];
    return this.on(event, wrapper);
  }

  off<K extends keyof E>(event: K, fn: E[K]): this {
    this.handlers.get(event)?.delete(fn);
    return this;
  }

  protected listens(event: keyof E): boolean {
    return (this.handlers.get(event)?.size ?? 0) > 0;
  }

  protected emit<K extends keyof E>(event: K, ...args: Parameters<E[K]>): void {
    const set = this.handlers.get(event);
    if (!set) return;
    for (const fn of [...set]) {
      try {
        fn(...args);
      } catch (err) {
        // A throwing handler never breaks the stream of the others.
        console.error(`[@bds/client] a realtime ${String(event)} handler threw`, err);
      }
    }
  }
}

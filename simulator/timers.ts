/**
 * Every timer and outgoing request the simulator starts is registered here, so that
 * close() and /__sim/reset can cancel them: a stray timer would keep a test process
 * alive or deliver a webhook from a previous test into the next one.
 */
export class TimerSet {
  private readonly timers = new Map<NodeJS.Timeout, () => void>();
  /** Sleeps that `releaseSleeps` may end early (resolving `true`, as if their time had come). */
  private readonly wakers = new Map<NodeJS.Timeout, { tag: string | undefined; wake: () => void }>();
  private readonly controllers = new Set<AbortController>();

  schedule(fn: () => void, ms: number): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      fn();
    }, ms);
    this.timers.set(timer, () => undefined);
  }

  /** Resolves `true` after `ms`, or `false` as soon as the set is cancelled. */
  sleep(ms: number, tag?: string): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        this.wakers.delete(timer);
        resolve(true);
      }, ms);
      this.timers.set(timer, () => resolve(false));
      this.wakers.set(timer, { tag, wake: () => resolve(true) });
    });
  }

  /** Ends pending sleeps now (those with `tag`, or all), as if their time had come; returns how many. */
  releaseSleeps(tag?: string): number {
    let n = 0;
    for (const [timer, w] of this.wakers) {
      if (tag !== undefined && w.tag !== tag) continue;
      clearTimeout(timer);
      this.timers.delete(timer);
      this.wakers.delete(timer);
      w.wake();
      n++;
    }
    return n;
  }

  /** An AbortController that cancelAll() aborts; call `release` when done with it. */
  controller(): { signal: AbortSignal; release: () => void } {
    const controller = new AbortController();
    this.controllers.add(controller);
    return { signal: controller.signal, release: () => this.controllers.delete(controller) };
  }

  cancelAll(): void {
    for (const [timer, onCancel] of this.timers) {
      clearTimeout(timer);
      onCancel();
    }
    this.timers.clear();
    this.wakers.clear();
    for (const controller of this.controllers) controller.abort();
    this.controllers.clear();
  }
}

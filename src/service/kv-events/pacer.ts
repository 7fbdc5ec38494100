/**
 * Cooperative yielding for the event path. A zeromq `receive()` resolves at once while messages
 * are queued, so a busy listener would run as one unbroken chain of microtasks and starve
 * selection requests (timers, HTTP). Listeners call {@link Pacer.yieldIfDue} after each message;
 * once the shared budget of busy time is spent, it waits for `setImmediate` (the next turn of
 * the event loop, after I/O). One pacer per ingress: all listeners share the thread, so they
 * share the budget too.
 */
export class Pacer {
  private since = performance.now();

  /** @param budgetMs busy time allowed between two yields. */
  constructor(readonly budgetMs: number) {}

  /** Yields to the event loop if the budget since the last yield is spent. */
  async yieldIfDue(): Promise<void> {
    if (performance.now() - this.since < this.budgetMs) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.since = performance.now();
  }
}

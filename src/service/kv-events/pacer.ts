/**
 * Cooperative scheduling of the event path. A zeromq `receive()` resolves at once while messages
 * are queued, so a busy listener would run as one unbroken chain of microtasks and starve
 * selection requests (timers, HTTP). The event loop is therefore split into turns: each turn
 * starts in a `setImmediate` callback (after the loop's I/O and timers ran) and lets listeners
 * work for `budgetMs`; a listener that finds the budget spent queues for a later turn. Waiting
 * listeners are resumed one per turn in FIFO order, so a busy engine cannot starve another.
 * One pacer per ingress: all listeners share the thread, so they share the budget.
 *
 * A batch too long for what is left of a turn is applied in slices: between two slices its
 * listener waits with {@link Pacer.resume}, which puts it ahead of every other waiter, so the
 * listeners' shared decoder (whose buffers hold the batch) is not used by another listener before
 * the batch is done.
 */
export class Pacer {
  private turnStart = performance.now();
  private readonly waiting: (() => void)[] = [];
  private scheduled = false;

  /** @param budgetMs busy time a turn may take before the event loop gets control back. */
  constructor(readonly budgetMs: number) {}

  /** Call before handling a message: resolves at once within the budget, else at a later turn. */
  turn(): Promise<void> {
    if (!this.spent()) return Promise.resolve();
    return new Promise<void>((resolve) => {
      this.waiting.push(resolve);
      this.schedule();
    });
  }

  /** Whether this turn's budget is used up (a batch being applied then stops after its current event). */
  readonly spent = (): boolean => performance.now() - this.turnStart >= this.budgetMs;

  /** Continue a batch at the next turn, before any other waiter. */
  resume(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.waiting.unshift(resolve);
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.next);
  }

  private readonly next = (): void => {
    this.scheduled = false;
    const resume = this.waiting.shift();
    if (resume === undefined) return;
    this.turnStart = performance.now();
    resume();
    if (this.waiting.length > 0) this.schedule();
  };
}

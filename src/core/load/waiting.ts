/**
 * Per rank row: the live bookings that await their first token (queued at the engine or in their
 * prefill, whatever their prefill tokens). The closest the service sees to an engine's waiting
 * queue: how many wait (the `llmd` policy's queue), since when the oldest has waited (how far the
 * rank has worked through the prefill booked on it) and the fraction of recent time any waited
 * (the busy fraction `ttft` prices a placement's cost to the others with).
 *
 * Rows are dense like {@link ActiveLoads}' own: typed arrays grown with it, reset when a row is
 * given to a rank. Isomorphic; no allocation per booking beyond its place in the row's FIFO.
 */

/** The window of {@link Waiting.busyFraction}, seconds (its time constant). */
export const BUSY_WINDOW_SECS = 10;

/** A booking as the waiting queue holds it. */
export interface Waiter {
  readonly admittedAt: number;
  /** True from {@link Waiting.add} until {@link Waiting.done}. */
  waiting: boolean;
}

export class Waiting {
  /** Per row: how many live bookings await their first token. */
  count: Int32Array = new Int32Array(0);
  /** Per row: those bookings in admission order (the front is pruned lazily of ones done). */
  private queue: Waiter[][] = [];
  /** Per row: the fraction of recent time some booking waited (decayed, see {@link busyFraction}). */
  private busyFrac: Float64Array = new Float64Array(0);
  /** Per row: when {@link busyFrac} was last brought up to date (ms). */
  private busyAt: Float64Array = new Float64Array(0);

  /** Makes room for `cap` rows (the rows already there keep their state). */
  grow(cap: number): void {
    if (cap <= this.count.length) return;
    const c = new Int32Array(cap), bf = new Float64Array(cap), ba = new Float64Array(cap);
    c.set(this.count);
    bf.set(this.busyFrac);
    ba.set(this.busyAt);
    this.count = c;
    this.busyFrac = bf;
    this.busyAt = ba;
    while (this.queue.length < cap) this.queue.push([]);
  }

  /** Row `row` starts empty and idle at `now` (given to a rank, or its rank removed). */
  reset(row: number, now: number): void {
    for (const w of this.queue[row]) w.waiting = false;
    this.queue[row] = [];
    this.count[row] = 0;
    this.busyFrac[row] = 0;
    this.busyAt[row] = now;
  }

  /** `w`, booked at `now` on `row`, awaits its first token. */
  add(row: number, w: Waiter, now: number): void {
    this.settle(row, now);
    w.waiting = true;
    this.queue[row].push(w);
    this.count[row]++;
  }

  /** `w` on `row` waits no more at `now` (its first token came, or it was freed); idempotent. */
  done(row: number, w: Waiter, now: number): void {
    if (!w.waiting) return;
    this.settle(row, now);
    w.waiting = false;
    this.count[row]--;
  }

  /**
   * Seconds the oldest booking on `row` that awaits its first token has waited at `now` (0 when
   * none does): how long the rank has been working through the prefill now booked on it.
   */
  oldestSecs(row: number, now: number): number {
    const q = this.queue[row];
    let k = 0;
    while (k < q.length && !q[k].waiting) k++;
    if (k > 0) q.splice(0, k); // each booking leaves the front once
    return q.length > 0 ? Math.max(0, now - q[0].admittedAt) / 1000 : 0;
  }

  /**
   * The fraction of the last ~{@link BUSY_WINDOW_SECS} seconds during which some booking on
   * `row` waited for its first token (time-decayed): how busy the rank's admission is, whatever
   * holds it (prefill work, or no free slot for another running request).
   */
  busyFraction(row: number, now: number): number {
    const keep = Math.exp(-Math.max(0, now - this.busyAt[row]) / 1000 / BUSY_WINDOW_SECS);
    return this.busyFrac[row] * keep + (this.count[row] > 0 ? 1 - keep : 0);
  }

  /** Brings a row's busy fraction up to `now`, before its count changes. */
  private settle(row: number, now: number): void {
    this.busyFrac[row] = this.busyFraction(row, now);
    this.busyAt[row] = now;
  }
}

/**
 * A bounded FIFO over a ring buffer: O(1) push and shift (an Array's `shift` is O(n), which
 * turns a 100,000-entry replica queue into quadratic work under load). `push` refuses (false)
 * when full: replica sync drops the newest event then (Dynamo `lib/kv-router/src/services/common/replica_sync.rs`).
 */
export class BoundedQueue<T> {
  private readonly buf: (T | undefined)[];
  private head = 0;
  private count = 0;

  constructor(readonly capacity: number) {
    this.buf = new Array<T | undefined>(Math.min(capacity, 1024));
  }

  get length(): number { return this.count; }

  /** Appends; false (nothing stored) when the queue holds `capacity` items. */
  push(v: T): boolean {
    if (this.count >= this.capacity) return false;
    if (this.count === this.buf.length) this.grow();
    this.buf[(this.head + this.count) % this.buf.length] = v;
    this.count++;
    return true;
  }

  /** Removes and returns the oldest item (undefined when empty). */
  shift(): T | undefined {
    if (this.count === 0) return undefined;
    const v = this.buf[this.head];
    this.buf[this.head] = undefined;
    this.head = (this.head + 1) % this.buf.length;
    this.count--;
    return v;
  }

  private grow(): void {
    const n = Math.min(this.capacity, this.buf.length * 2);
    const items: (T | undefined)[] = [];
    for (let i = 0; i < this.count; i++) items.push(this.buf[(this.head + i) % this.buf.length]);
    this.buf.length = n;
    for (let i = 0; i < n; i++) this.buf[i] = i < items.length ? items[i] : undefined;
    this.head = 0;
  }
}

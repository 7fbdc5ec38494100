/**
 * Admission queue of one partition (Dynamo `lib/kv-router/src/scheduling/queue.rs`): one heap per policy class, priority key
 * `(strict_priority, policy score)` with ties by arrival, per-class counters and per-worker
 * limits, and class selection by weighted round robin (each visit of a class may admit up to
 * `quantum` requests). Holds opaque waiters; the core decides when a head can run.
 */
import type { PolicyClassConfig, PolicyProfile } from './policy-config.js';
import type { QueueRejectionDetails } from '../errors.js';
import type { Clock } from '../random.js';

/** A request waiting in a partition's admission queue (the core decides when it can run). */
export interface Waiter {
  canRun(): boolean;
  run(): void;
  fail(err: unknown): void;
}

/** What a waiting request brings to the queue. */
export interface QueueEntryInput<T> {
  strictPriority: number;
  priorityJump: number;
  /** `max(isl - best_cached_tokens, 1)` (wspt). */
  schedulingCostTokens: number;
  islTokens: number;
  cachedTokens: number;
  payload: T;
}

interface Entry<T> extends QueueEntryInput<T> { seq: number; score: number; enqueuedAt: number; cls: number }

interface ClassQueue<T> { cfg: PolicyClassConfig; heap: Entry<T>[]; requests: number; rawIslTokens: number; cachedTokens: number }

const before = <T>(a: Entry<T>, b: Entry<T>): boolean =>
  a.strictPriority !== b.strictPriority ? a.strictPriority > b.strictPriority : a.score !== b.score ? a.score > b.score : a.seq < b.seq;

export class AdmissionQueue<T> {
  private readonly classes: ClassQueue<T>[];
  private readonly start: number;
  private seq = 0;
  private next = 0;
  private credit = 0;

  constructor(readonly profile: PolicyProfile, private readonly clock: Clock) {
    this.classes = profile.classes.map((cfg) => ({ cfg, heap: [], requests: 0, rawIslTokens: 0, cachedTokens: 0 }));
    this.start = clock.now();
  }

  classConfig(i: number): PolicyClassConfig { return this.classes[i].cfg; }

  /** Whether the class already has waiting requests (new arrivals never bypass a backlog). */
  hasBacklog(cls: number): boolean { return this.classes[cls].heap.length > 0; }

  /** The queue-limit rejection for one more request in `cls`, given the worker count (limits are per worker). */
  rejection(cls: number, workerCount: number): QueueRejectionDetails | null {
    const c = this.classes[cls];
    const checks: [QueueRejectionDetails['limit_kind'], number, number | null][] = [
      ['requests', c.requests, c.cfg.requestQueueLimitPerWorker],
      ['raw_isl_tokens', c.rawIslTokens, c.cfg.rawIslTokenQueueLimitPerWorker],
      ['cached_tokens', c.cachedTokens, c.cfg.cachedTokenQueueLimitPerWorker],
    ];
    for (const [kind, current, perWorker] of checks) {
      if (perWorker === null) continue;
      const limit = perWorker * workerCount;
      if (current >= limit) return { policy_class: c.cfg.name, limit_kind: kind, current, limit };
    }
    return null;
  }

  enqueue(cls: number, e: QueueEntryInput<T>): void {
    const c = this.classes[cls];
    const now = this.clock.now();
    const offset = (now - this.start) / 1000;
    const jump = Math.max(e.priorityJump, 0);
    const score = c.cfg.queuePolicy === 'wspt' ? (1 + jump) / Math.max(e.schedulingCostTokens, 1)
      : c.cfg.queuePolicy === 'lcfs' ? jump + offset : jump - offset;
    const entry: Entry<T> = { ...e, seq: this.seq++, score, enqueuedAt: now, cls };
    c.heap.push(entry);
    this.up(c.heap, c.heap.length - 1);
    c.requests++;
    c.rawIslTokens += e.islTokens;
    c.cachedTokens += e.cachedTokens;
  }

  /** Waiting requests and their ISL tokens (for `/loads`). */
  pending(): { count: number; islTokens: number } {
    let count = 0, islTokens = 0;
    for (const c of this.classes) { count += c.requests; islTokens += c.rawIslTokens; }
    return { count, islTokens };
  }

  /**
   * Pops the next admissible head: classes visited round robin, `quantum` admissions per visit;
   * within a class only the head is considered (head-of-line blocking). `canRun` says whether
   * the head's eligible ranks are not all busy.
   */
  pop(canRun: (payload: T) => boolean): { payload: T; waitedMs: number } | undefined {
    const n = this.classes.length;
    for (let k = 0; k < n; k++) {
      const i = (this.next + k) % n;
      const c = this.classes[i];
      if (c.heap.length === 0) continue;
      const head = c.heap[0];
      if (!canRun(head.payload)) continue;
      this.removeAt(c, 0);
      if (i === this.next && this.credit + 1 < c.cfg.quantum) this.credit++;
      else { this.next = (i + 1) % n; this.credit = 0; }
      return { payload: head.payload, waitedMs: this.clock.now() - head.enqueuedAt };
    }
    return undefined;
  }

  /** Remove a waiter (client went away, worker drained, shutdown). */
  remove(payload: T): boolean {
    for (const c of this.classes) {
      const at = c.heap.findIndex((e) => e.payload === payload);
      if (at >= 0) { this.removeAt(c, at); return true; }
    }
    return false;
  }

  /** Every waiter (for shutdown / drain handling). */
  payloads(): T[] { return this.classes.flatMap((c) => c.heap.map((e) => e.payload)); }

  private removeAt(c: ClassQueue<T>, at: number): void {
    const h = c.heap;
    const e = h[at];
    const last = h.pop() as Entry<T>;
    if (at < h.length) {
      h[at] = last;
      this.down(h, at);
      this.up(h, at);
    }
    c.requests--;
    c.rawIslTokens -= e.islTokens;
    c.cachedTokens -= e.cachedTokens;
  }

  private up(h: Entry<T>[], i: number): void {
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!before(h[i], h[p])) break;
      [h[i], h[p]] = [h[p], h[i]];
      i = p;
    }
  }

  private down(h: Entry<T>[], i: number): void {
    for (;;) {
      const l = 2 * i + 1, r = l + 1;
      let m = i;
      if (l < h.length && before(h[l], h[m])) m = l;
      if (r < h.length && before(h[r], h[m])) m = r;
      if (m === i) return;
      [h[i], h[m]] = [h[m], h[i]];
      i = m;
    }
  }
}

/**
 * A client driving several replicas as a load balancer would: a steady rate of operations, each
 * a booking (`/select_and_reserve`) or the free (`DELETE`) of a random live booking, sent to a
 * random replica of those it routes to (a free mostly goes to another replica than its booking).
 * It keeps the truth: which bookings are live, on which worker, so a test compares each
 * replica's `/loads` with it. A replica is taken out of the rotation (`exclude`, after its
 * requests in flight end) before a fault, and put back (`include`) after.
 */
import type { ServiceProcess } from './service-process.js';

export interface DriverOptions {
  model: string;
  opsPerSec: number;
  /** Live bookings the driver keeps between (below `min` it books, above `max` it frees). */
  min: number;
  max: number;
  /** Seeded random in [0, 1). */
  random: () => number;
}

type Target = Pick<ServiceProcess, 'request'>;

export class LoadDriver {
  /** Live bookings: id -> worker id. */
  readonly truth = new Map<string, number>();
  readonly counts = { booked: 0, freed: 0, freedUnknownHere: 0, failed: 0 };
  readonly failures: string[] = [];
  private readonly targets = new Set<Target>();
  private readonly inflight = new Map<Promise<void>, Target>();
  private readonly freeing = new Set<string>();
  private running = false;
  private paused = false;
  private loop: Promise<void> | null = null;
  private next = 0;

  constructor(private readonly o: DriverOptions) {}

  include(t: Target): void { this.targets.add(t); }

  /** Stops routing to `t` and waits for its requests in flight. */
  async exclude(t: Target): Promise<void> {
    this.targets.delete(t);
    await Promise.all([...this.inflight].filter(([, to]) => to === t).map(([p]) => p));
  }

  start(): void {
    this.running = true;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
    await Promise.all(this.inflight.keys());
  }

  /** No new operations until {@link resume}; resolves when those in flight have ended. */
  async pause(): Promise<void> {
    this.paused = true;
    await Promise.all(this.inflight.keys());
  }

  resume(): void { this.paused = false; }

  /** Live bookings per worker, by the truth. */
  expected(workers: readonly number[]): Map<number, number> {
    const m = new Map(workers.map((w) => [w, 0]));
    for (const w of this.truth.values()) m.set(w, (m.get(w) ?? 0) + 1);
    return m;
  }

  private async run(): Promise<void> {
    const period = 1000 / this.o.opsPerSec;
    let due = performance.now();
    while (this.running) {
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      due = Math.max(due + period, performance.now() - 10 * period); // catch up a little, never in a burst
      if (this.paused || this.targets.size === 0 || this.inflight.size >= 64) continue;
      const targets = [...this.targets];
      const to = targets[Math.floor(this.o.random() * targets.length)];
      const live = this.truth.size - this.freeing.size;
      const book = live < this.o.min || (live < this.o.max && this.o.random() < 0.5);
      const p: Promise<void> = (book ? this.book(to) : this.free(to)).finally(() => { this.inflight.delete(p); });
      this.inflight.set(p, to);
    }
  }

  private async book(to: Target): Promise<void> {
    const id = `d-${this.next++}`;
    const tokens = Array.from({ length: 8 }, () => Math.floor(this.o.random() * 1000));
    try {
      const r = await to.request('POST', '/select_and_reserve', { model_name: this.o.model, selection_id: id, token_ids: tokens });
      if (r.status !== 200) { this.fail(`book ${id}: ${r.status} ${JSON.stringify(r.body)}`); return; }
      this.truth.set(id, Number(r.body.worker_id));
      this.counts.booked++;
    } catch (err) {
      this.fail(`book ${id}: ${(err as Error).message}`);
    }
  }

  private async free(to: Target): Promise<void> {
    const ids = [...this.truth.keys()].filter((id) => !this.freeing.has(id));
    if (ids.length === 0) return;
    const id = ids[Math.floor(this.o.random() * ids.length)];
    this.freeing.add(id);
    try {
      const r = await to.request('DELETE', `/reservations/${id}`);
      // 404: this replica had not heard of it (yet); the free is published all the same
      if (r.status !== 200 && r.status !== 404) { this.fail(`free ${id}: ${r.status} ${JSON.stringify(r.body)}`); return; }
      if (r.status === 404) this.counts.freedUnknownHere++;
      this.truth.delete(id);
      this.counts.freed++;
    } catch (err) {
      this.fail(`free ${id}: ${(err as Error).message}`);
    } finally {
      this.freeing.delete(id);
    }
  }

  private fail(what: string): void {
    this.counts.failed++;
    if (this.failures.length < 20) this.failures.push(what);
  }
}

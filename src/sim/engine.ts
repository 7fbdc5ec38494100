/**
 * A simulated inference engine: one worker rank, scheduled step by step like vLLM's V1
 * scheduler (vllm/v1/core/sched/scheduler.py, `Scheduler.schedule`), in virtual time.
 *
 * Each step has a budget of `maxBatchedTokens` (max_num_batched_tokens):
 * 1. running requests first, in admission order: a decoding request takes one token, one still
 *    in (chunked) prefill takes what is left of its prompt up to the budget. When its KV blocks
 *    cannot be allocated, the newest running request is preempted (its blocks are released, it
 *    goes back to the head of the waiting queue and later recomputes what is not cached) until
 *    they can, or until it is the one preempted;
 * 2. then, unless this step preempted, waiting requests in arrival order while budget remains
 *    and fewer than `maxConcurrent` (max_num_seqs) run: the prefix cache is looked up (at most
 *    all tokens but the last, which is always computed), the blocks for the scheduled chunk are
 *    allocated (evicting cached blocks least recently released first), or the queue stops there.
 * The step lasts {@link stepMs} of the profile's cost over the scheduled work. When a request's
 * computed tokens reach its sequence it samples a token: the first one is its time to first
 * token (`prefill_complete`), each one that opens a block is an `output_block`, the last frees
 * it. KV events are published at the end of the step, in order: blocks evicted, prompt blocks
 * stored when allocated, generated blocks stored once full (see {@link KvCache}).
 */
import type { EventQueue } from './event-queue.js';
import { KvCache } from './kv-cache.js';
import { stepMs, type StepCost } from './perf-model.js';

/** Engine parameters of every rank of a fleet. */
export interface EngineParams {
  blockSize: number;
  /** KV capacity per rank in blocks (Infinity = unbounded). */
  capacityBlocks: number;
  /** Running requests per rank (max_num_seqs). */
  maxConcurrent: number;
  /** Token budget of a step (max_num_batched_tokens). */
  maxBatchedTokens: number;
  /** Step-time coefficients. */
  cost: Readonly<StepCost>;
}

/** One request as the engine runs it; times are virtual ms. */
export interface SimRequest {
  readonly index: number;
  readonly id: string;
  readonly isl: number;
  readonly osl: number;
  /** Prompt block keys, root first. */
  readonly keys: number[];
  /** When the request reached the router. */
  readonly arrival: number;
  /** When the router's selection completed (later than `arrival` only after waiting in its queue). */
  readonly routed: number;
  /** First scheduled (its prefix-cache lookup). */
  prefillStart: number;
  /** First token. */
  prefillEnd: number;
  end: number;
  /** Prefix-cache hit at the first lookup, blocks and tokens. */
  cachedBlocks: number;
  cachedTokens: number;
  /** Output blocks reported (generated tokens that opened a block). */
  outputBlocks: number;
  /** Engine state: tokens with KV computed (or being computed this step), tokens sampled. */
  computed: number;
  generated: number;
  /** Blocks held, and keys of the generated blocks (allocated once, reused after a preemption). */
  blocks: number;
  genKeys: number[];
  /** Generated blocks announced (hashed) since the last (re)allocation. */
  genHashed: number;
  /** Highest `computed` ever reached (what lies below it after a preemption is recompute). */
  highWater: number;
  preemptions: number;
  /** Tokens scheduled in the current step. */
  stepTokens: number;
}

/** A request with no engine state yet. */
export function newRequest(index: number, isl: number, osl: number, keys: number[], arrival: number, routed = arrival): SimRequest {
  return {
    index, id: `r${index}`, isl, osl, keys, arrival, routed, prefillStart: 0, prefillEnd: 0, end: 0,
    cachedBlocks: 0, cachedTokens: 0, outputBlocks: 0, computed: 0, generated: 0, blocks: 0, genKeys: [], genHashed: 0,
    highWater: 0, preemptions: 0, stepTokens: 0,
  };
}

/** Where an engine announces its cache changes (KV events), by block key. */
export interface KvEventSink {
  stored(workerId: bigint, dpRank: number, parent: number | null, keys: readonly number[]): void;
  removed(workerId: bigint, dpRank: number, keys: readonly number[]): void;
}

/** Lifecycle callbacks (the host maps them onto the selection API). */
export interface EngineHooks {
  prefillComplete(r: SimRequest): void;
  outputBlock(r: SimRequest): void;
  finished(r: SimRequest): void;
}

/** Work counters of one engine. */
export interface EngineCounters {
  steps: number;
  /** Tokens computed in prefill chunks (first computation and recompute). */
  prefillTokens: number;
  /** Prefill tokens computed again after a preemption. */
  recomputedTokens: number;
  /** Tokens sampled (every output token). */
  decodeTokens: number;
  preemptions: number;
  /** Busy virtual time, ms. */
  busyMs: number;
}

/** Generated blocks get keys above every trace key (hash_id x 512 / block size < 2^40). */
const GENERATED_KEY_BASE = 2 ** 46;

/** A KV event waiting for the end of the step. */
type KvOp = { stored: true; parent: number | null; keys: number[] } | { stored: false; keys: number[] };

export class SimEngine {
  readonly cache: KvCache;
  readonly counters: EngineCounters = { steps: 0, prefillTokens: 0, recomputedTokens: 0, decodeTokens: 0, preemptions: 0, busyMs: 0 };
  private waiting: SimRequest[] = [];
  private waitHead = 0;
  private running: SimRequest[] = [];
  private readonly scheduled: SimRequest[] = [];
  private busy = false;
  private ops: KvOp[] = [];
  private readonly onStepDone = (): void => this.stepDone();
  /** The decode-only stretch in progress (k > 0), see {@link fastForward}. */
  private readonly ff = { t0: 0, seqs: 0, kv: 0, k: 0, gen: 0 };
  /** Whether decode-only stretches run as one event (off: every step is an event; same results). */
  fastPath = true;
  private nextGenKey: number;
  /** Tokens of the requests on this rank (prompt + output blocks so far), waiting or running. */
  activeTokens = 0;

  constructor(
    readonly workerId: bigint, readonly dpRank: number, private readonly p: EngineParams,
    private readonly events: EventQueue, private readonly sink: KvEventSink, private readonly hooks: EngineHooks,
    /** Distinct per engine so generated keys never collide across ranks. */
    engineIndex = 0,
  ) {
    this.cache = new KvCache(p.capacityBlocks);
    this.nextGenKey = GENERATED_KEY_BASE + engineIndex * 2 ** 36;
  }

  /** Requests on this rank, waiting or running. */
  get activeRequests(): number { return this.waiting.length - this.waitHead + this.running.length; }

  /** A routed request arrives now. */
  arrive(r: SimRequest): void {
    this.activeTokens += r.isl;
    this.waiting.push(r);
    if (this.ff.k > 0) this.cutFastForward();
    else if (!this.busy) this.step();
  }

  private keyAt(r: SimRequest, b: number): number {
    const n = r.keys.length;
    if (b < n) return r.keys[b];
    while (r.genKeys.length <= b - n) r.genKeys.push(this.nextGenKey++);
    return r.genKeys[b - n];
  }

  /** Hold the blocks `r` needs for `tokens` tokens beyond `from` held ones, or nothing (false). */
  private allocate(r: SimRequest, tokens: number, hits = 0): boolean {
    const need = Math.ceil(tokens / this.p.blockSize);
    const c = this.cache;
    let cost = 0;
    for (let b = r.blocks; b < need; b++) cost += c.cost(this.keyAt(r, b));
    if (cost > c.available) return false;
    // evictions happen while allocating, the new prompt blocks are stored after (vLLM's order)
    const evicted: number[] = [];
    const stored: KvOp[] = [];
    let run: number[] | null = null;
    for (let b = r.blocks; b < need; b++) {
      const key = this.keyAt(r, b);
      const prompt = b < r.keys.length;
      // a missing block is new; a cached one beyond the hit is shared (hits were counted by the caller)
      if (c.hold(key, prompt, evicted) && prompt) {
        if (run === null) { run = []; stored.push({ stored: true, parent: b > 0 ? this.keyAt(r, b - 1) : null, keys: run }); }
        run.push(key);
      } else run = null;
    }
    if (evicted.length > 0) this.ops.push({ stored: false, keys: evicted });
    for (const op of stored) this.ops.push(op);
    r.blocks = Math.max(r.blocks, need, hits);
    return true;
  }

  /** Release every block `r` holds, tail first. */
  private releaseAll(r: SimRequest): void {
    for (let b = r.blocks - 1; b >= 0; b--) this.cache.release(this.keyAt(r, b));
    r.blocks = 0;
    r.genHashed = 0;
  }

  private preempt(r: SimRequest): void {
    this.releaseAll(r);
    r.computed = 0;
    r.preemptions++;
    this.counters.preemptions++;
    if (this.waitHead > 0) this.waiting[--this.waitHead] = r;
    else this.waiting.unshift(r);
  }

  /** Schedule and start one step (nothing when there is no work). */
  private step(): void {
    const p = this.p, c = this.cache, running = this.running, sched = this.scheduled;
    sched.length = 0;
    if (this.fastForward()) return;
    let budget = p.maxBatchedTokens;
    let preempted = false;
    for (let i = 0; i < running.length && budget > 0;) {
      const r = running[i];
      const n = Math.min(r.isl + r.generated - r.computed, budget);
      let ok = true;
      while (!this.allocate(r, r.computed + n)) {
        const victim = running.pop() as SimRequest;
        this.preempt(victim);
        preempted = true;
        if (victim === r) { ok = false; break; }
      }
      if (!ok) break;
      r.stepTokens = n;
      sched.push(r);
      budget -= n;
      i++;
    }
    while (!preempted && budget > 0 && running.length < p.maxConcurrent && this.waitHead < this.waiting.length) {
      const r = this.waiting[this.waitHead];
      const total = r.isl + r.generated;
      // the prefix lookup: whole blocks, and never the last token (it must be computed to sample)
      const seq = r.generated > 0 ? [...r.keys, ...r.genKeys] : r.keys;
      const hits = c.matchPrefix(seq);
      const hitTokens = Math.min(hits * p.blockSize, total - 1);
      let cost = 0;
      for (let b = 0; b < hits; b++) if (c.isEvictable(seq[b])) cost++;
      const n = Math.min(total - hitTokens, budget);
      const need = Math.ceil((hitTokens + n) / p.blockSize);
      for (let b = hits; b < need; b++) cost += c.cost(this.keyAt(r, b));
      if (cost > c.available) break;
      const none: number[] = [];
      for (let b = 0; b < hits; b++) c.hold(seq[b], true, none);
      r.blocks = hits;
      this.allocate(r, hitTokens + n, hits);
      this.waitHead++;
      running.push(r);
      if (r.highWater === 0 && r.preemptions === 0) {
        r.prefillStart = this.events.clock.t;
        r.cachedBlocks = hits;
        r.cachedTokens = hitTokens;
      }
      r.computed = hitTokens;
      r.stepTokens = n;
      sched.push(r);
      budget -= n;
    }
    if (this.waitHead > 1024 && this.waitHead * 2 > this.waiting.length) {
      this.waiting = this.waiting.slice(this.waitHead);
      this.waitHead = 0;
    }
    if (sched.length === 0) {
      if (this.waitHead < this.waiting.length) {
        const r = this.waiting[this.waitHead];
        throw new Error(`request ${r.id} (${r.isl} prompt tokens) cannot be scheduled on a rank of ${p.capacityBlocks} KV blocks`);
      }
      return;
    }
    let prefillTokens = 0, prefillPairs = 0, decodeSeqs = 0, decodeKv = 0;
    for (const r of sched) {
      const n = r.stepTokens, total = r.isl + r.generated;
      if (r.generated > 0 && n === 1 && r.computed === total - 1) { decodeSeqs++; decodeKv += total; }
      else { prefillTokens += n; prefillPairs += n * (r.computed + (n + 1) / 2); }
    }
    const ms = stepMs(p.cost, prefillTokens, prefillPairs, decodeSeqs, decodeKv);
    this.busy = true;
    this.counters.steps++;
    this.counters.busyMs += ms;
    this.events.after(ms, this.onStepDone);
  }

  /**
   * Decode-only stretches, many steps at once. While nothing is waiting and every running
   * request decodes without needing a new block, each step is the same batch with one more
   * token per sequence, until the first step at which some request opens a block or finishes.
   * Those steps are scheduled as one event at the time the last of them ends (each step's time
   * summed exactly as one-by-one stepping would); an arrival meanwhile cuts the stretch at the
   * first step that ends after it ({@link arrive}), so it joins the same step as it would have.
   */
  private fastForward(): boolean {
    const running = this.running, p = this.p, bs = p.blockSize;
    if (!this.fastPath || this.waitHead < this.waiting.length || running.length === 0 || running.length > p.maxBatchedTokens) return false;
    let k = Infinity, kv = 0;
    for (const r of running) {
      const total = r.isl + r.generated;
      if (r.generated === 0 || r.computed !== total - 1 || Math.ceil(total / bs) > r.blocks) return false;
      const x = (total - 1) % bs;
      k = Math.min(k, Math.max(1, r.osl) - r.generated, x === 0 ? bs : bs - x);
      kv += total;
    }
    if (k < 2) return false;
    const t0 = this.events.clock.t;
    const ff = this.ff;
    ff.t0 = t0; ff.seqs = running.length; ff.kv = kv; ff.k = k; ff.gen++;
    this.busy = true;
    this.scheduleFastForwardEnd();
    return true;
  }

  /** Step `j` (1-based) of the current stretch ends at the returned time (and `busyMs` accumulates as one-by-one stepping would). */
  private ffEnd(j: number): number {
    const ff = this.ff;
    let t = ff.t0;
    for (let i = 0; i < j; i++) t += stepMs(this.p.cost, 0, 0, ff.seqs, ff.kv + i * ff.seqs);
    return t;
  }

  private scheduleFastForwardEnd(): void {
    const ff = this.ff, gen = ff.gen;
    this.events.at(this.ffEnd(ff.k), () => { if (ff.gen === gen) this.fastForwardDone(); });
  }

  /** Cut the stretch at the first step that ends after now. */
  private cutFastForward(): void {
    const ff = this.ff, now = this.events.clock.t;
    let t = ff.t0;
    for (let j = 1; j < ff.k; j++) {
      t += stepMs(this.p.cost, 0, 0, ff.seqs, ff.kv + (j - 1) * ff.seqs);
      if (t > now) {
        ff.k = j;
        ff.gen++;
        this.scheduleFastForwardEnd();
        return;
      }
    }
  }

  private fastForwardDone(): void {
    const ff = this.ff, k = ff.k, counters = this.counters;
    ff.k = 0;
    // k - 1 silent steps (nothing happens in them by construction), then the last one as usual
    for (let i = 0; i < k; i++) counters.busyMs += stepMs(this.p.cost, 0, 0, ff.seqs, ff.kv + i * ff.seqs);
    counters.steps += k;
    counters.decodeTokens += (k - 1) * ff.seqs;
    const sched = this.scheduled;
    sched.length = 0;
    for (const r of this.running) {
      r.computed += k - 1;
      r.generated += k - 1;
      r.highWater = Math.max(r.highWater, r.computed);
      r.stepTokens = 1;
      sched.push(r);
    }
    this.stepDone();
  }

  private stepDone(): void {
    const ops = this.ops;
    this.ops = [];
    const bs = this.p.blockSize, counters = this.counters;
    const sampled: SimRequest[] = [];
    for (const r of this.scheduled) {
      const before = r.computed, total = r.isl + r.generated;
      r.computed += r.stepTokens;
      if (!(r.generated > 0 && r.stepTokens === 1 && before === total - 1)) {
        counters.prefillTokens += r.stepTokens;
        counters.recomputedTokens += Math.max(0, Math.min(r.computed, r.highWater) - before);
      }
      r.highWater = Math.max(r.highWater, r.computed);
      // generated blocks that filled are hashed and announced
      const n = r.keys.length;
      while (n + r.genHashed < r.blocks && (n + r.genHashed + 1) * bs <= r.computed) {
        const b = n + r.genHashed++;
        const key = this.keyAt(r, b);
        if (this.cache.isUnhashed(key)) {
          this.cache.hash(key);
          ops.push({ stored: true, parent: this.keyAt(r, b - 1), keys: [key] });
        }
      }
      if (r.computed === total) sampled.push(r);
    }
    this.publish(ops);
    const now = this.events.clock.t;
    let finished = false;
    for (const r of sampled) {
      r.generated++;
      counters.decodeTokens++;
      if (r.generated === 1) { r.prefillEnd = now; this.hooks.prefillComplete(r); }
      // output token g sits at position isl + g - 1; at a block boundary it opened a block
      if ((r.isl + r.generated - 1) % bs === 0) {
        r.outputBlocks++;
        this.activeTokens += bs;
        this.hooks.outputBlock(r);
      }
      if (r.generated >= Math.max(1, r.osl)) {
        r.end = now;
        r.stepTokens = -1;
        this.releaseAll(r);
        this.activeTokens -= r.isl + r.outputBlocks * bs;
        finished = true;
        this.hooks.finished(r);
      }
    }
    if (finished) {
      const running = this.running;
      let k = 0;
      for (const r of running) if (r.stepTokens !== -1) running[k++] = r;
      running.length = k;
    }
    this.busy = false;
    this.step();
  }

  private publish(ops: KvOp[]): void {
    for (const op of ops) {
      if (op.stored) this.sink.stored(this.workerId, this.dpRank, op.parent, op.keys);
      else this.sink.removed(this.workerId, this.dpRank, op.keys);
    }
  }
}

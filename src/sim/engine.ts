/**
 * A simulated inference engine: one worker rank with its own prefix cache, in virtual time.
 *
 * Model (deliberately small, every constant a fleet parameter):
 * - admission: at most `maxConcurrent` requests run (prefill queue + decode); the rest wait FIFO;
 * - prefill: one request at a time, FIFO, at `prefillTokensPerSec` over its uncached tokens. The
 *   cache is looked up when its prefill starts, so every earlier request's blocks are already
 *   stored (what a single serial engine with unbounded cache would reuse is exactly the trace's
 *   own prefix reuse);
 * - first token when the prefill ends: the new blocks are stored (KV event `Stored`), and the
 *   host is told (`prefill_complete`);
 * - decode: `decodeTokensPerSec` per request, independent of batch size; each time the sequence
 *   crosses a block boundary it takes one more KV block (`output_block`), evicting LRU blocks as
 *   needed (KV event `Removed`); after `output_length` tokens the request ends (`free`).
 */
import type { EventQueue } from './event-queue.js';
import { PrefixCache } from './prefix-cache.js';

/** Engine parameters of every rank of a fleet. */
export interface EngineParams {
  blockSize: number;
  /** KV capacity per rank in blocks (Infinity = unbounded). */
  capacityBlocks: number;
  prefillTokensPerSec: number;
  /** Decode speed of each running request. */
  decodeTokensPerSec: number;
  maxConcurrent: number;
}

/** One request as the engine runs it; times are virtual ms. */
export interface SimRequest {
  readonly index: number;
  readonly id: string;
  readonly isl: number;
  readonly osl: number;
  /** Block keys, root first. */
  readonly keys: number[];
  /** When the request reached the router. */
  readonly arrival: number;
  /** When the router's selection completed (later than `arrival` only after waiting in its queue). */
  readonly routed: number;
  prefillStart: number;
  prefillEnd: number;
  end: number;
  cachedBlocks: number;
  cachedTokens: number;
  outputBlocks: number;
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

export class SimEngine {
  readonly cache: PrefixCache;
  private readonly waiting: SimRequest[] = [];
  private waitHead = 0;
  private readonly prefillQueue: SimRequest[] = [];
  private prefillHead = 0;
  private prefilling = false;
  private running = 0;
  /** Tokens of the requests on this rank (prompt + output blocks so far), waiting or running. */
  activeTokens = 0;

  constructor(
    readonly workerId: bigint, readonly dpRank: number, private readonly p: EngineParams,
    private readonly events: EventQueue, private readonly sink: KvEventSink, private readonly hooks: EngineHooks,
  ) {
    this.cache = new PrefixCache(p.capacityBlocks);
  }

  /** Requests on this rank, waiting or running. */
  get activeRequests(): number { return this.waiting.length - this.waitHead + this.running; }

  /** A routed request arrives now. */
  arrive(r: SimRequest): void {
    this.activeTokens += r.isl;
    this.waiting.push(r);
    this.admit();
  }

  private admit(): void {
    while (this.waitHead < this.waiting.length && this.running < this.p.maxConcurrent) {
      const r = this.waiting[this.waitHead++];
      this.running++;
      this.prefillQueue.push(r);
    }
    compact(this.waiting, this.waitHead, (h) => { this.waitHead = h; });
    this.startPrefill();
  }

  private startPrefill(): void {
    if (this.prefilling || this.prefillHead >= this.prefillQueue.length) return;
    const r = this.prefillQueue[this.prefillHead++];
    compact(this.prefillQueue, this.prefillHead, (h) => { this.prefillHead = h; });
    this.prefilling = true;
    const now = this.events.clock.t;
    r.prefillStart = now;
    r.cachedBlocks = this.cache.matchPrefix(r.keys);
    r.cachedTokens = Math.min(r.cachedBlocks * this.p.blockSize, r.isl);
    this.evicted(this.cache.acquire(r.keys));
    const ms = ((r.isl - r.cachedTokens) / this.p.prefillTokensPerSec) * 1000;
    this.events.after(ms, () => this.prefillDone(r));
  }

  private prefillDone(r: SimRequest): void {
    r.prefillEnd = this.events.clock.t;
    const k = r.cachedBlocks;
    if (k < r.keys.length) this.sink.stored(this.workerId, this.dpRank, k > 0 ? r.keys[k - 1] : null, r.keys.slice(k));
    this.hooks.prefillComplete(r);
    this.prefilling = false;
    this.startPrefill();
    // the first output token exists now; token g (1-based) comes (g - 1) / speed later
    const firstCross = Math.ceil(r.isl / this.p.blockSize) * this.p.blockSize - r.isl + 1;
    this.decodeUntil(r, firstCross);
  }

  /** Schedule the next block crossing at output token `g`, or the end. */
  private decodeUntil(r: SimRequest, g: number): void {
    const bs = this.p.blockSize;
    const at = (tok: number): number => r.prefillEnd + ((tok - 1) / this.p.decodeTokensPerSec) * 1000;
    if (g <= r.osl) {
      this.events.at(at(g), () => {
        r.outputBlocks++;
        this.activeTokens += bs;
        this.evicted(this.cache.addOutputBlock());
        this.hooks.outputBlock(r);
        this.decodeUntil(r, g + bs);
      });
      return;
    }
    this.events.at(at(Math.max(1, r.osl)), () => this.finish(r));
  }

  private finish(r: SimRequest): void {
    r.end = this.events.clock.t;
    this.cache.release(r.keys, r.outputBlocks);
    this.activeTokens -= r.isl + r.outputBlocks * this.p.blockSize;
    this.running--;
    this.hooks.finished(r);
    this.admit();
  }

  private evicted(keys: number[]): void {
    if (keys.length > 0) this.sink.removed(this.workerId, this.dpRank, keys);
  }
}

/** Drop consumed queue heads once they dominate the array (amortised O(1) dequeue). */
function compact<T>(q: T[], head: number, setHead: (h: number) => void): void {
  if (head > 1024 && head * 2 > q.length) {
    q.splice(0, head);
    setHead(0);
  }
}

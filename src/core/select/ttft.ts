/**
 * The `ttft` routing policy: each candidate rank's cost is its predicted time to first token
 * for this request, in seconds, plus the time the placement costs the requests that come after:
 *
 *   ttft    = the partition's learned TTFT model (load/ttft-model.ts) on the rank's state with
 *             this request added: the prefill still to do there (what remains of the booked
 *             prefill, plus this request's uncached tokens), the context its running requests
 *             hold, its step budget and speed, and the wait for a free slot past `max_num_seqs`
 *   work    = this request's uncached tokens x the rank's seconds per prefill token
 *   delay   = delay_weight x (
 *               max(own, share) x work x ttft / (1 - busy)
 *                                                the requests that reach the rank while this one
 *                                                waits and computes, and after them the rest of
 *                                                the busy period, each wait for its work
 *              + own x life x 2 x added step)   those reaching it while this one decodes see the
 *                                                step in progress and their own (2) longer by the
 *                                                context it adds (its cost per token no less than
 *                                                the model's prior: see addedStepSeconds)
 *   evict   = evict_weight x the recompute of the cached blocks it evicts: its new blocks beyond
 *             the rank's free KV (capacity minus what the KV index holds there)
 *   preempt = the recompute of the blocks the rank's requests and this one would hold beyond its
 *             capacity (the engine preempts)
 *   spread  = for a rank that does not hold the prompt's cached prefix (a block more uncached
 *             than the best holder) and steps faster than the fastest holder: minus spread_secs x
 *             the prefix's live traffic per second (its live bookings, two at least, over their
 *             life) / (holders + 1) x the step time saved. A hot prefix earns a new copy where the
 *             new copy's requests will each wait less, for the time that copy keeps serving them.
 *   cost    = ttft + delay + evict + preempt - spread
 *
 * `own` is the rank's bookings per second over the last ~10 s; `share` its share of the
 * partition's, were they split by speed (1 / the model's measured factor, over the candidates').
 * Its own bookings are this policy's past choices: a rank it has passed over (for its long decodes,
 * say) reads as one few requests reach, yet the requests whose context it caches come back to it
 * whatever the policy chose lately, and a long prefill there blocks them; so the work is charged
 * at least the rank's share. (Not the decode's part: charged there, the slower kind of a mixed
 * fleet pays it on every request and the faster kind's medians rise.)
 * `busy` is the fraction of the last ~10 s during which a booking on the rank awaited its first
 * token; `life` is this request's decode (its expected output tokens, or the partition's mean, in
 * steps of the rank's current length). Uncached tokens count what the KV index holds on the rank
 * and the prompt blocks live bookings there already hold (a burst of one new prefix is computed
 * once, where its first request went).
 *
 * Nothing here knows the engine: the model is fitted to the service's own bookings and their
 * `prefill_complete` calls, so it follows the engine's step costs, decode interference and
 * heterogeneous ranks. At light load `delay` is small and the policy is greedy on time to first
 * token; as queues form it grows with them and saves the fleet's compute (cache hits) and the
 * busiest ranks' steps, with no weight to tune for the load. `evict` and `preempt` need
 * `total_kv_blocks` in the worker record, the slot wait `max_num_seqs`.
 *
 * Costs within `tie_tolerance` (relative; about how well the learned model tells two ranks apart)
 * of the lowest count as equal; among them the rank this
 * policy sent a request to least recently wins (its cache's least recently used blocks are the
 * oldest), ranks never chosen first, at random.
 *
 * Selected with `--routing-policy ttft` / `SELECT_SERVICE_ROUTING_POLICY=ttft` (parameters as
 * `ttft:name=value:name=value`).
 */
import type { Clock } from '../random.js';
import type { TtftModel, RankState } from '../load/ttft-model.js';
import { rankKeyOf } from '../index/slots.js';
import { WorkerInputs, type PolicyPartition, type WorkerPicker, type WorkerScorer, type WorkerSelectionPolicy } from './policy.js';
import { ttftParams } from './routing-policy.js';

/** Ranks remembered by the least-recently-chosen rotation (the oldest is forgotten first). */
const MAX_RANKS = 65_536;
/** A rank busy more of the time than this is taken as busy this much (its busy period would be unbounded). */
const MAX_BUSY = 0.95;
/** Time constant of the booking-rate estimate, seconds. */
const RATE_WINDOW_SECS = 10;
/** Steps a request arriving at a rank waits out before its first token: the one in progress and its own. */
const ARRIVAL_STEPS = 2;

/** What the policy reads from its partition. */
export interface TtftInputs {
  /** The partition's learned TTFT model. */
  model(): TtftModel;
  /** Live bookings sharing the first `blocks` blocks of a prompt (absent: 0). */
  liveSharing?(prefixWords: Uint32Array, blocks: number): number;
  /** KV blocks a rank holds on device, as the KV index sees them (absent: the evict term reads 0). */
  heldBlocks?(workerId: bigint, dpRank: number): number;
  readonly clock: Clock;
}

/** Decayed count of bookings: each weighs exp(-age / window). */
interface Decayed { weight: number; last: number }

/**
 * Bookings per second of a partition and of each of its ranks: bookings counted with weight
 * exp(-age / window), over the time that weight spans since the partition's first booking (so a
 * rank's first booking is not read as a burst).
 */
class BookingRates {
  private first = NaN;
  private readonly all: Decayed = { weight: 0, last: 0 };
  private readonly ranks = new Map<string, Decayed>();

  add(key: string, now: number): void {
    if (Number.isNaN(this.first)) this.first = now;
    let d = this.ranks.get(key);
    if (!d) {
      if (this.ranks.size >= MAX_RANKS) this.ranks.delete(this.ranks.keys().next().value as string);
      this.ranks.set(key, d = { weight: 0, last: now });
    }
    count(d, now);
    count(this.all, now);
  }

  /** Bookings per second of rank `key` at `now`. */
  of(key: string, now: number): number {
    const d = this.ranks.get(key);
    return d ? this.perSecond(d, now) : 0;
  }

  /** Bookings per second of the partition at `now`. */
  total(now: number): number { return this.perSecond(this.all, now); }

  private perSecond(d: Decayed, now: number): number {
    const span = RATE_WINDOW_SECS * (1 - Math.exp(-Math.max(0, now - this.first) / 1000 / RATE_WINDOW_SECS));
    return span > 0 ? decayed(d, now) / span : 0;
  }

  remove(key: string): void { this.ranks.delete(key); }
}

const decayed = (d: Decayed, now: number): number => d.weight * Math.exp(-Math.max(0, now - d.last) / 1000 / RATE_WINDOW_SECS);
const count = (d: Decayed, now: number): void => { d.weight = decayed(d, now) + 1; d.last = now; };

/** The `ttft` policy of one partition. */
export function createTtftPolicy(partition: PolicyPartition, params: Readonly<Record<string, unknown>>, inputs: TtftInputs): WorkerSelectionPolicy {
  const p = ttftParams(params);
  const bs = partition.blockSize;
  const rates = new BookingRates();
  /** When (in picks) each rank was last chosen. */
  const lastChosen = new Map<string, number>();
  let picks = 0;
  /** Per candidate of the current scoring: uncached prompt tokens, seconds per decode step, speed, rank key. */
  let unc = new Float64Array(64), step = new Float64Array(64), speed = new Float64Array(64);
  const keys: string[] = [];
  const state: RankState = { prefillTokens: 0, requests: 0, contextTokens: 0, stepTokens: 0, slots: 0 };
  const scorer: WorkerScorer = {
    requiredWorkerInputs: () => WorkerInputs.CACHE | WorkerInputs.LOAD,
    score(ctx, cands, out) {
      const model = inputs.model(), isl = ctx.promptTokens(), n = cands.length, now = inputs.clock.now();
      // the partition's model believes a rank's factor beyond this policy's factor_se (the
      // partition is not built yet when the policy is)
      model.factorSe = p.factor_se;
      const osl = ctx.expectedOutputTokens() ?? model.meanOutputTokens;
      const outBlocks = Math.ceil(osl / bs);
      if (unc.length < n) { unc = new Float64Array(2 * n); step = new Float64Array(2 * n); speed = new Float64Array(2 * n); }
      let speeds = 0;
      for (let i = 0; i < n; i++) {
        const w = cands[i].worker(), key = keys[i] = rankKeyOf(w.workerId, w.dpRank);
        speeds += speed[i] = 1 / model.measuredFactor(key);
      }
      keys.length = n;
      const partitionRate = rates.total(now);
      for (let i = 0; i < n; i++) {
        const c = cands[i], w = c.worker(), key = keys[i];
        const cached = Math.max(c.accountingCacheEstimate(), c.activeOverlapBlocks() * bs);
        const uncached = Math.max(0, isl - cached);
        state.prefillTokens = uncached;
        state.requests = c.activeRequests();
        state.contextTokens = c.contextTokens();
        state.stepTokens = c.maxNumBatchedTokens() ?? 0;
        state.slots = c.maxNumSeqs() ?? 0;
        state.prefillTokens += model.remainingPrefill(key, c.activePrefillTokens(), c.pendingSeconds(), state);
        const ttft = model.predict(key, state), perToken = model.secondsPerToken(key, state);
        const work = uncached * perToken;
        // the requests that reach this rank before its queue next empties wait for this one's
        // work: those arriving while it waits, and after them the rest of the busy period
        // (1 / (1 - busy) times as long), no fewer than the rank's share of the partition's;
        // those reaching it while it decodes see every step longer by what it adds. (The slot it
        // takes is not charged to others: wherever it goes it takes one for as long, and its own
        // wait for a slot is in its predicted ttft.)
        const own = rates.of(key, now), share = (partitionRate * speed[i]) / speeds, busy = Math.min(c.busyFraction(), MAX_BUSY);
        const stepSecs = model.stepSeconds(key, state), life = osl * stepSecs;
        const delay = p.delay_weight * ((Math.max(own, share) * work * ttft) / (1 - busy) + own * life * ARRIVAL_STEPS * model.addedStepSeconds(key, isl + osl / 2));
        const capacity = c.totalKvBlocks();
        const free = capacity && inputs.heldBlocks ? Math.max(0, capacity - inputs.heldBlocks(w.workerId, w.dpRank)) : Infinity;
        const evicted = Math.max(0, Math.ceil(uncached / bs) - free);
        const over = capacity ? Math.max(0, c.decodeCostBlocks() + outBlocks - capacity) : 0;
        out[i] = ttft + delay + (p.evict_weight * evicted + over) * bs * perToken;
        unc[i] = uncached;
        step[i] = stepSecs;
      }
      if (p.spread_secs > 0) spread(ctx.prefixWords(), isl, osl, n, out);
    },
  };
  /**
   * The new copy's credit: the ranks that hold the prompt's cached prefix best (`uncached` within
   * a block of the least) share its live traffic; a rank that does not hold it and steps faster
   * than the fastest holder is credited, for `spread_secs`, with its share of that traffic
   * (holders + 1 copies) times the step it saves each of those requests.
   */
  const spread = (words: Uint32Array, isl: number, osl: number, n: number, out: Float64Array): void => {
    // without an output length (none given, none freed yet) the prefix's traffic is unknown
    if (!(osl > 0)) return;
    let least = Infinity;
    for (let i = 0; i < n; i++) least = Math.min(least, unc[i]);
    let holders = 0, holderStep = Infinity;
    for (let i = 0; i < n; i++) if (unc[i] <= least + bs) { holders++; holderStep = Math.min(holderStep, step[i]); }
    if (holders === n) return;
    const depth = Math.min(words.length / 2, Math.floor((isl - least) / bs));
    const live = depth > 0 ? inputs.liveSharing?.(words, depth) ?? 0 : 0;
    // one live booking is one conversation's turn in flight, not traffic to share out
    if (live < 2) return;
    // Little's law: the prefix's arrivals per second are its live requests over their life
    const share = live / Math.max(1e-3, osl * holderStep) / (holders + 1);
    for (let i = 0; i < n; i++) {
      if (unc[i] > least + bs) out[i] -= p.spread_secs * share * Math.max(0, holderStep - step[i]);
    }
  };
  const picker: WorkerPicker = {
    pick: (_ctx, rows, rng) => {
      let min = Infinity;
      for (const r of rows) min = Math.min(min, r.cost());
      const limit = min + Math.abs(min) * p.tie_tolerance;
      let row = 0, oldest = Infinity, ties = 0;
      for (let i = 0; i < rows.length; i++) {
        if (rows[i].cost() > limit) continue;
        const w = rows[i].candidate.worker();
        const at = lastChosen.get(rankKeyOf(w.workerId, w.dpRank)) ?? -1;
        if (at < oldest) { oldest = at; row = i; ties = 1; }
        else if (at === oldest && Math.floor(rng.next() * ++ties) === 0) row = i;
      }
      const w = rows[row].candidate.worker(), key = rankKeyOf(w.workerId, w.dpRank);
      lastChosen.delete(key);
      lastChosen.set(key, picks++);
      if (lastChosen.size > MAX_RANKS) lastChosen.delete(lastChosen.keys().next().value as string);
      return row;
    },
  };
  const policy: WorkerSelectionPolicy = {
    filters: Object.freeze([]), scorers: Object.freeze([scorer]), picker,
    onBooked: (b) => rates.add(rankKeyOf(b.workerId, b.dpRank), inputs.clock.now()),
    onRankRemoved: (workerId, dpRank) => { const k = rankKeyOf(workerId, dpRank); rates.remove(k); lastChosen.delete(k); },
  };
  return Object.freeze(policy);
}

/**
 * The `ttft` routing policy: each candidate rank's cost is an estimate, in seconds, of this
 * request's time to first token there plus the time it costs other requests:
 *
 *   stick   = 1 + backlog_weight x (prefill seconds booked on the least loaded candidate)
 *   wait    = (prefill tokens already booked on the rank + stick x this request's uncached tokens) / rate
 *   decode  = wait x decode_weight x (KV blocks its running requests hold / its KV blocks)
 *   memory  = memory_weight x (blocks past memory_threshold x its KV blocks, counting this request's) x block size / rate
 *   evict   = evict_weight x (this request's new prompt blocks beyond the rank's free KV blocks) x block size / rate
 *   away    = session_weight x stick x prompt tokens / rate, on every rank but the one the
 *             request's session was last routed to
 *   cost    = wait + decode + memory + evict + away
 *
 * `rate` is the rank's prefill throughput learned online from bookings and `prefill_complete`
 * (load/prefill-rate.ts), blended with a prior of `prior_tokens_per_sec` worth
 * `prior_weight_tokens` observed tokens, and believed only where it differs from the rate pooled
 * over the candidates by more than its noise (`credibleRate`): ranks of one kind look a few
 * percent apart from their request mix alone, and that must not decide where work goes. The
 * decode term charges ranks whose running requests fill their KV memory (each engine step then
 * spends longer on decode attention, so prefill chunks advance more slowly); the memory term
 * charges pushing a rank's held blocks past its capacity, which preempts running requests (their
 * recompute is charged at the same rate). The evict term is the cache a placement destroys: the
 * blocks the rank holds (the KV index's view of it) leave `total_kv_blocks - held` free, and
 * every new block beyond those evicts a cached one, which a later request finds missing with
 * probability `evict_weight` and recomputes; it sends new conversations to ranks with free
 * cache instead of to those that merely hold the shared system prompt. Decode, memory and evict
 * need `total_kv_blocks` in the worker record and read 0 without it. When even the least loaded
 * rank has prefill booked the fleet is saturated: every token computed then delays the requests
 * queued behind it too, so uncached tokens weigh `stick` times; and a session kept on
 * one rank keeps its prefix warm there (`away`, which grows with `stick` for the same reason).
 *
 * Costs within `tie_tolerance` (relative) of the lowest are below what these estimates resolve
 * and count as equal; among them the rank this policy sent a request to least recently wins (its
 * cache's least recently used blocks are the oldest, so the cheapest to lose), and ranks never
 * chosen go first, at random. Nothing here knows the engine: only the load the service books,
 * its `prefill_complete` calls and the KV index. The defaults `backlog_weight`, `session_weight`,
 * `evict_weight` and `tie_tolerance` were tuned in the simulator on the first half of the
 * bundled Mooncake conversation trace (README, "Choosing a policy").
 *
 * Selected with `--routing-policy ttft` / `SELECT_SERVICE_ROUTING_POLICY=ttft` (parameters as
 * `ttft:name=value:name=value`); the default stays `kv`, Dynamo's cost function.
 */
import { rankKeyOf } from '../index/slots.js';
import { credibleRate, prefillRate, type PrefillObservations, type PrefillRates } from '../load/prefill-rate.js';
import { WorkerInputs, type PolicyPartition, type WorkerPicker, type WorkerScorer, type WorkerSelectionPolicy } from './policy.js';
import { ttftParams } from './routing-policy.js';

/** Sessions (and ranks) remembered per partition (the oldest is forgotten first). */
const MAX_SESSIONS = 65_536;

/** What the policy reads from its partition. */
export interface TtftInputs {
  /** The partition's learned prefill rates. */
  rates(): PrefillRates;
  /** KV blocks a rank holds on device, as the KV index sees them (absent: the evict term reads 0). */
  heldBlocks?(workerId: bigint, dpRank: number): number;
}

/** Insert or move `key` to the most recent end of a bounded map. */
function touch<V>(m: Map<string, V>, key: string, v: V): void {
  m.delete(key);
  m.set(key, v);
  if (m.size > MAX_SESSIONS) m.delete(m.keys().next().value as string);
}

/** The `ttft` policy of one partition, reading the partition's learned prefill rates and KV index. */
export function createTtftPolicy(partition: PolicyPartition, params: Readonly<Record<string, unknown>>, inputs: TtftInputs): WorkerSelectionPolicy {
  const p = ttftParams(params);
  const prior = { tokensPerSec: p.prior_tokens_per_sec, weightTokens: p.prior_weight_tokens };
  const bs = partition.blockSize;
  /** Where each session's last request went (most recent last, bounded). */
  const homes = new Map<string, { workerId: bigint; dpRank: number }>();
  /** When (in picks) each rank was last chosen. */
  const lastChosen = new Map<string, number>();
  let picks = 0;
  const scorer: WorkerScorer = {
    requiredWorkerInputs: () => WorkerInputs.CACHE | WorkerInputs.LOAD,
    score(ctx, cands, out) {
      const learned = inputs.rates(), isl = ctx.promptTokens(), n = cands.length;
      // ranks are alike until their own observations say otherwise: each rank's prior is the
      // rate pooled over the candidates (itself on the configured prior)
      const obs = new Array<PrefillObservations | undefined>(n);
      const pooledObs = { tokens: 0, seconds: 0, samples: 0 };
      let backlog = Infinity;
      for (let i = 0; i < n; i++) {
        const w = cands[i].worker();
        const o = learned.observed(rankKeyOf(w.workerId, w.dpRank));
        obs[i] = o;
        if (o) { pooledObs.tokens += o.tokens; pooledObs.seconds += o.seconds; pooledObs.samples += o.samples; }
        backlog = Math.min(backlog, cands[i].activePrefillTokens());
      }
      const pooled = Math.max(1, prefillRate(pooledObs, prior));
      // when even the least loaded rank has prefill queued, the fleet is saturated: tokens a
      // request computes delay everyone after it, so they weigh more
      const stick = 1 + (p.backlog_weight * backlog) / pooled;
      const session = ctx.sessionId();
      const home = session === undefined ? undefined : homes.get(session);
      for (let i = 0; i < n; i++) {
        const c = cands[i], w = c.worker();
        const rate = Math.max(1, credibleRate(obs[i], pooled, p.prior_weight_tokens));
        const uncached = Math.max(0, isl - c.accountingCacheEstimate());
        const wait = (c.activePrefillTokens() + stick * uncached) / rate;
        const capacity = c.totalKvBlocks();
        const held = c.decodeCostBlocks();
        const decode = capacity ? wait * p.decode_weight * Math.min(1, held / capacity) : 0;
        const over = capacity ? Math.max(0, held - p.memory_threshold * capacity) : 0;
        const free = capacity && inputs.heldBlocks ? Math.max(0, capacity - inputs.heldBlocks(w.workerId, w.dpRank)) : Infinity;
        const evicted = Math.max(0, Math.ceil(uncached / bs) - free);
        const away = home !== undefined && (home.workerId !== w.workerId || home.dpRank !== w.dpRank) ? p.session_weight * isl : 0;
        out[i] = wait + decode + ((p.memory_weight * over + p.evict_weight * evicted) * bs + stick * away) / rate;
      }
    },
  };
  const picker: WorkerPicker = {
    pick: (ctx, rows, rng) => {
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
      const w = rows[row].candidate.worker();
      touch(lastChosen, rankKeyOf(w.workerId, w.dpRank), picks++);
      const session = ctx.sessionId();
      if (session !== undefined && p.session_weight > 0) touch(homes, session, { workerId: w.workerId, dpRank: w.dpRank });
      return row;
    },
  };
  return Object.freeze({ filters: Object.freeze([]), scorers: Object.freeze([scorer]), picker });
}

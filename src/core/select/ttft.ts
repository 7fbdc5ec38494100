/**
 * The `ttft` routing policy: each candidate rank's cost is an estimate of this request's time to
 * first token there, in seconds (lower wins, ties broken at random):
 *
 *   stick   = 1 + backlog_weight x (prefill seconds booked on the least loaded candidate)
 *   wait    = (prefill tokens already booked on the rank + stick x this request's uncached tokens) / rate
 *   decode  = wait x decode_weight x (KV blocks its running requests hold / its KV blocks)
 *   memory  = memory_weight x (blocks past memory_threshold x its KV blocks, counting this request's) x block size / rate
 *   away    = session_weight x stick x prompt tokens / rate, on every rank but the one the
 *             request's session was last routed to
 *   cost    = wait + decode + memory + away
 *
 * `rate` is the rank's prefill throughput learned online from bookings and `prefill_complete`
 * (load/prefill-rate.ts), blended with a prior of `prior_tokens_per_sec` worth
 * `prior_weight_tokens` observed tokens. The decode term charges ranks whose running requests
 * fill their KV memory (each engine step then spends longer on decode attention, so prefill
 * chunks advance more slowly); the memory term charges pushing a rank's held blocks past its
 * capacity, which evicts other cached prefixes and, past the end, preempts running requests
 * (their recompute is charged at the same rate). Both need `total_kv_blocks` in the worker
 * record and read 0 without it. When even the least loaded rank has prefill booked the fleet is
 * saturated: every token a request does not find cached then delays the requests behind it too,
 * so uncached tokens weigh `stick` times; and a session kept on one rank keeps its prefix warm
 * there (`away`, which grows with `stick` for the same reason). Nothing here knows the engine:
 * only the load the service books. The defaults were tuned in the simulator on the first half of
 * the bundled Mooncake conversation trace (README, "Choosing a policy").
 *
 * Selected with `--routing-policy ttft` / `SELECT_SERVICE_ROUTING_POLICY=ttft` (parameters as
 * `ttft:name=value:name=value`); the default stays `kv`, Dynamo's cost function.
 */
import { rankKeyOf } from '../index/slots.js';
import { prefillRate, type PrefillObservations, type PrefillRates } from '../load/prefill-rate.js';
import { WorkerInputs, type PolicyPartition, type WorkerPicker, type WorkerScorer, type WorkerSelectionPolicy } from './policy.js';
import { pickByCost } from './selector.js';
import { ttftParams } from './routing-policy.js';

/** Sessions remembered per partition (the oldest is forgotten first). */
const MAX_SESSIONS = 65_536;

/** The `ttft` policy of one partition, reading the partition's learned prefill rates. */
export function createTtftPolicy(partition: PolicyPartition, params: Readonly<Record<string, unknown>>, rates: () => PrefillRates): WorkerSelectionPolicy {
  const p = ttftParams(params);
  const prior = { tokensPerSec: p.prior_tokens_per_sec, weightTokens: p.prior_weight_tokens };
  const bs = partition.blockSize;
  /** Where each session's last request went (most recent last, bounded). */
  const homes = new Map<string, { workerId: bigint; dpRank: number }>();
  const scorer: WorkerScorer = {
    requiredWorkerInputs: () => WorkerInputs.CACHE | WorkerInputs.LOAD,
    score(ctx, cands, out) {
      const learned = rates(), isl = ctx.promptTokens(), n = cands.length;
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
      // request does not find cached delay everyone after it, so they weigh more
      const stick = 1 + (p.backlog_weight * backlog) / pooled;
      const session = ctx.sessionId();
      const home = session === undefined ? undefined : homes.get(session);
      for (let i = 0; i < n; i++) {
        const c = cands[i];
        const rate = Math.max(1, prefillRate(obs[i], { tokensPerSec: pooled, weightTokens: p.prior_weight_tokens }));
        const uncached = Math.max(0, isl - c.accountingCacheEstimate());
        const wait = (c.activePrefillTokens() + stick * uncached) / rate;
        const capacity = c.totalKvBlocks();
        const held = c.decodeCostBlocks();
        const decode = capacity ? wait * p.decode_weight * Math.min(1, held / capacity) : 0;
        const over = capacity ? Math.max(0, held - p.memory_threshold * capacity) : 0;
        const w = c.worker();
        const away = home !== undefined && (home.workerId !== w.workerId || home.dpRank !== w.dpRank) ? (p.session_weight * stick * isl) / rate : 0;
        out[i] = wait + decode + (p.memory_weight * over * bs) / rate + away;
      }
    },
  };
  const picker: WorkerPicker = {
    pick: (ctx, rows, rng) => {
      const row = pickByCost(Float64Array.from(rows, (r) => r.cost()), rows.length, 0, rng);
      const session = ctx.sessionId();
      if (session !== undefined && p.session_weight > 0) {
        const w = rows[row].candidate.worker();
        homes.delete(session);
        homes.set(session, { workerId: w.workerId, dpRank: w.dpRank });
        if (homes.size > MAX_SESSIONS) homes.delete(homes.keys().next().value as string);
      }
      return row;
    },
  };
  return Object.freeze({ filters: Object.freeze([]), scorers: Object.freeze([scorer]), picker });
}

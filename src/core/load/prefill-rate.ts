/**
 * Online prefill throughput per worker rank, learned from the lifecycle the service sees:
 * a booking carries the tokens it still has to prefill (`effective_prefill_tokens`, the
 * uncached part) and `prefill_complete` says when they were done. A rank works its prefills
 * roughly first come first served, so a completion accounts for the time since the later of
 * its booking and the rank's previous completion (the busy time it alone explains): summed over
 * completions, tokens over busy time is the rank's prefill rate including the decode steps it
 * shares time with. Both sums decay geometrically per observation, so the rate follows a rank
 * whose load or hardware changes.
 *
 * The sums of squares and products of each observation's tokens and seconds give the rate's
 * standard error, so a policy can tell a rank that is slower from one whose request mix made it
 * look slower ({@link credibleRate}).
 *
 * Mirrored bookings (replica sync) feed it like local ones: they are booked and completed in
 * the same load table. Isomorphic; times are the core's clock (ms).
 */

/** Decayed sums of one rank's prefill observations. */
export interface PrefillObservations {
  /** Prefilled (uncached) tokens. */
  tokens: number;
  /** Busy seconds those tokens took. */
  seconds: number;
  /** Observations so far (not decayed). */
  samples: number;
  /** Decayed sums of each observation's tokens², tokens x seconds and seconds² (absent: no spread known). */
  tt?: number;
  ts?: number;
  ss?: number;
}

interface RankState extends PrefillObservations { lastDone: number }

/** Weight an observation keeps per later one: the sums remember about the last 32 prefills. */
export const PREFILL_RATE_DECAY = 1 - 1 / 32;

export class PrefillRates {
  private readonly ranks = new Map<string, RankState>();

  /** `tokens` booked at `bookedAt` finished prefill at `now` on rank `key` (ms). */
  observe(key: string, tokens: number, bookedAt: number, now: number): void {
    let st = this.ranks.get(key);
    if (!st) { st = { tokens: 0, seconds: 0, samples: 0, tt: 0, ts: 0, ss: 0, lastDone: -Infinity }; this.ranks.set(key, st); }
    const t = Math.max(0, tokens), sec = Math.max(0, now - Math.max(bookedAt, st.lastDone)) / 1000, d = PREFILL_RATE_DECAY;
    st.tokens = st.tokens * d + t;
    st.seconds = st.seconds * d + sec;
    st.tt = (st.tt ?? 0) * d + t * t;
    st.ts = (st.ts ?? 0) * d + t * sec;
    st.ss = (st.ss ?? 0) * d + sec * sec;
    st.samples++;
    st.lastDone = Math.max(st.lastDone, now);
  }

  /** The sums of a rank (undefined before its first completion). */
  observed(key: string): PrefillObservations | undefined { return this.ranks.get(key); }

  removeRank(key: string): void { this.ranks.delete(key); }
}

/** A prior belief about a rank's prefill rate: `tokensPerSec`, worth `weightTokens` observed tokens. */
export interface PrefillRatePrior { tokensPerSec: number; weightTokens: number }

/** The rate a rank is believed to prefill at, tokens/s: the prior blended with the observations. */
export function prefillRate(obs: PrefillObservations | undefined, prior: PrefillRatePrior): number {
  const tokens = prior.weightTokens + (obs?.tokens ?? 0);
  const seconds = prior.weightTokens / prior.tokensPerSec + (obs?.seconds ?? 0);
  return seconds > 0 ? tokens / seconds : prior.tokensPerSec;
}

/**
 * The standard error of a rank's observed rate tokens / seconds, tokens/s: the ratio
 * estimator's, the spread of each observation's tokens around rate x its seconds over the
 * seconds observed. Infinity without observations; 0 when they carry no spread.
 */
export function rateStandardError(obs: PrefillObservations | undefined): number {
  if (!obs || !(obs.seconds > 0)) return Infinity;
  const r = obs.tokens / obs.seconds;
  return Math.sqrt(Math.max(0, (obs.tt ?? 0) - 2 * r * (obs.ts ?? 0) + r * r * (obs.ss ?? 0))) / obs.seconds;
}

/** Standard errors a rank's rate must differ from the fleet's by before the difference counts. */
export const CREDIBLE_Z = 2;

/**
 * The rate to believe for one rank given the fleet's `pooled` rate: the rank's own (blended with
 * the pooled rate as a prior worth `weightTokens` tokens), moved toward the pooled rate by
 * {@link CREDIBLE_Z} standard errors and no further. A rank whose observations are as fast as
 * the fleet's within their noise (request mix, per-request overhead) gets the pooled rate; a rank
 * clearly slower or faster keeps the part of the difference its noise cannot explain.
 */
export function credibleRate(obs: PrefillObservations | undefined, pooled: number, weightTokens: number): number {
  const own = prefillRate(obs, { tokensPerSec: pooled, weightTokens });
  const d = own - pooled, slack = CREDIBLE_Z * rateStandardError(obs);
  return Math.abs(d) <= slack ? pooled : own - Math.sign(d) * slack;
}

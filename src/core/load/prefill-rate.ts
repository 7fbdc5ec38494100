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
}

interface RankState extends PrefillObservations { lastDone: number }

/** Weight an observation keeps per later one: the sums remember about the last 32 prefills. */
export const PREFILL_RATE_DECAY = 1 - 1 / 32;

export class PrefillRates {
  private readonly ranks = new Map<string, RankState>();

  /** `tokens` booked at `bookedAt` finished prefill at `now` on rank `key` (ms). */
  observe(key: string, tokens: number, bookedAt: number, now: number): void {
    let st = this.ranks.get(key);
    if (!st) { st = { tokens: 0, seconds: 0, samples: 0, lastDone: -Infinity }; this.ranks.set(key, st); }
    const busyMs = Math.max(0, now - Math.max(bookedAt, st.lastDone));
    st.tokens = st.tokens * PREFILL_RATE_DECAY + Math.max(0, tokens);
    st.seconds = st.seconds * PREFILL_RATE_DECAY + busyMs / 1000;
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

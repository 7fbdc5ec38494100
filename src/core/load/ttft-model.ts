/**
 * A learned model of time to first token, fitted online to what the service sees: a booking's
 * rank state when it was booked, and how long after it `prefill_complete` came.
 *
 * An engine of the vLLM kind works in steps. Each step runs every running request's decode (one
 * token each, attending its whole context) and up to `max_num_batched_tokens` of prefill, first
 * come first served, so a request's first token comes after the steps that prefill the tokens
 * booked ahead of it and its own uncached tokens:
 *
 *   ttft = steps x (fixed + per context token x C) + per prefill token x T  [+ slot wait]
 *
 * with T the prefill tokens ahead plus its own, steps = 1 + T / max_num_batched_tokens and C the
 * tokens of context the rank's requests hold (each decode attends all of its own context; a block
 * two requests share is read twice). A rank already running `max_num_seqs` requests admits a new
 * one only when one finishes: the slot wait is its place in that queue times the time a slot
 * takes to free, modelled apart (the fit sees times without it).
 *
 * The three coefficients are the engine's and unknown here: they are fitted by recursive least
 * squares with forgetting (the last ~500 completions weigh most) on relative errors, from a prior
 * of an 8B-class model on a current GPU (20,000 prefill tokens/s, 10 ms steps, 5 ms per step per
 * 100,000 context tokens) with a standard deviation twice each value. A rank of other hardware is
 * slower or faster in all of them at once: a per-rank factor (its observed over predicted times,
 * believed only beyond {@link RANK_FACTOR_SE} standard errors) carries that.
 *
 * Isomorphic, no allocation per observation; times in seconds.
 */

/** Number of coefficients. */
const K = 3;
/** Feature scales: prefill tokens per unit of coefficient 1, context tokens per unit of coefficient 2. */
const TOKENS = 1_000, CONTEXT = 100_000;
/** The prior coefficients (scaled units): step seconds, seconds per 1,000 prefill tokens, step seconds per 100,000 context tokens. */
const PRIOR = Object.freeze([0.01, TOKENS / 20_000, 0.005]);
/** Weight an observation keeps per later one in the fit (memory of about 500 completions). */
export const TTFT_FIT_FORGET = 1 - 1 / 500;
/** Weight a rank factor's observation keeps per later one of that rank. */
const RANK_DECAY = 1 - 1 / 32;
/** Observed-equals-predicted seconds the rank factor starts from (its prior weight). */
const RANK_PRIOR_SECONDS = 0.25;
/**
 * Standard errors a rank's observed over predicted times must stand from 1 before the rank keeps a
 * factor (and by which the factor is moved toward 1). Every rank is tested at once: at two, one
 * in twenty of a fleet's equal ranks would carry a factor by chance at any moment (three on 64
 * ranks); at three, one in 370. The `ttft` policy's `factor_se` sets it per partition.
 */
export const RANK_FACTOR_SE = 3;
/** Predictions below this are weighed as this in the fit (one fast engine step). */
const MIN_PREDICTION_SECS = 0.005;
/** The step budget assumed for a rank whose record has no `max_num_batched_tokens` (vLLM's default). */
export const DEFAULT_STEP_TOKENS = 8_192;

/**
 * The output tokens a freed booking most likely generated, from the blocks its output opened: the
 * middle of the range they allow. Clients report `output_block` when the context grows into a new
 * block, as Dynamo's router does (ceil((isl + output) / block) passes ceil(isl / block)), so the
 * first block opens after the room left in the prompt's last block. Counting each opened block as
 * a whole block of output read every output shorter than that room as none: in the simulator's
 * grid (512-token blocks, a 2,048-token system prompt plus a question) the learned mean was half
 * the true one.
 */
export function outputTokensFromBlocks(islTokens: number, openedBlocks: number, blockSize: number): number {
  const room = Math.ceil(islTokens / blockSize) * blockSize - islTokens;
  return openedBlocks > 0 ? room + (openedBlocks - 0.5) * blockSize : room / 2;
}

/** A rank's state as one booking met it (what the model's features are made of). */
export interface RankState {
  /** Prefill tokens booked ahead on the rank plus the booking's own uncached tokens. */
  prefillTokens: number;
  /** Requests live on the rank, this one not counted. */
  requests: number;
  /** Context tokens those requests hold. */
  contextTokens: number;
  /** The rank's `max_num_batched_tokens` (0: unknown). */
  stepTokens: number;
  /** The rank's `max_num_seqs` (0: unknown, no limit assumed). */
  slots: number;
}

/** Writes the scaled features of `s` into `out` (length {@link K}). */
function features(s: Readonly<RankState>, out: Float64Array): void {
  const steps = 1 + s.prefillTokens / (s.stepTokens > 0 ? s.stepTokens : DEFAULT_STEP_TOKENS);
  out[0] = steps;
  out[1] = s.prefillTokens / TOKENS;
  out[2] = (steps * s.contextTokens) / CONTEXT;
}

/** Decayed sums of one rank's observed and predicted seconds, their squares and product. */
interface RankFactor { observed: number; predicted: number; oo: number; op: number; pp: number }
/** A rank's observed over predicted times, each with {@link RANK_PRIOR_SECONDS} of prior (a ratio estimator). */
const ratioOf = (f: RankFactor): number => (f.observed + RANK_PRIOR_SECONDS) / (f.predicted + RANK_PRIOR_SECONDS);

export class TtftModel {
  /** Coefficients (scaled units). */
  private readonly theta = Float64Array.from(PRIOR);
  /** Inverse information matrix of the fit (row-major K x K). */
  private readonly p = new Float64Array(K * K);
  /** The prior variance of each coefficient: the most uncertainty forgetting may bring back. */
  private readonly priorVar = Float64Array.from(PRIOR, (v) => (2 * v) ** 2);
  private readonly x = new Float64Array(K);
  private readonly px = new Float64Array(K);
  private readonly ranks = new Map<string, RankFactor>();
  /** Typical relative error of the fit (decayed average). */
  private spread = 0.3;
  /** Decayed sum and count of freed bookings' output tokens. */
  private readonly outputs = { sum: 0, weight: 0 };
  /** Completions fitted so far. */
  samples = 0;
  /** Standard errors a rank's factor must stand from 1 before it is believed ({@link RANK_FACTOR_SE}). */
  factorSe = RANK_FACTOR_SE;

  constructor() {
    for (let i = 0; i < K; i++) this.p[i * K + i] = this.priorVar[i];
  }

  /** Predicted seconds to first token on rank `key` in state `s`: the fit, the rank's factor, the slot wait. */
  predict(key: string, s: Readonly<RankState>): number {
    return this.rankFactor(key) * this.base(s) + this.slotWait(key, s);
  }

  /** The seconds one more prefill token costs on rank `key` (the marginal of {@link predict}). */
  secondsPerToken(key: string, s: Readonly<RankState>): number {
    const b = s.stepTokens > 0 ? s.stepTokens : DEFAULT_STEP_TOKENS;
    return this.rankFactor(key) * Math.max(0, this.theta[1]) / TOKENS + this.stepSeconds(key, s) / b;
  }

  /** Seconds one engine step takes on rank `key` in state `s` without prefill (fixed + the decodes of what runs there). */
  stepSeconds(key: string, s: Readonly<RankState>): number {
    const t = this.theta;
    return this.rankFactor(key) * (Math.max(0, t[0]) + (Math.max(0, t[2]) * s.contextTokens) / CONTEXT);
  }

  /**
   * Seconds one more running request holding `contextTokens` adds to each step on rank `key` (its
   * decode reads that context every step): the fit's cost per context token, but no less than the
   * prior's. Under steady load the context a rank holds hardly moves, so the fit cannot tell its
   * cost from the fixed step and may trade one for the other: its predictions stay right, but the
   * cost a new request's decode puts on the others would read as nothing.
   */
  addedStepSeconds(key: string, contextTokens: number): number {
    return (this.rankFactor(key) * Math.max(PRIOR[2], this.theta[2]) * contextTokens) / CONTEXT;
  }

  /**
   * The prefill tokens still to compute of `booked` tokens booked on rank `key` whose oldest
   * booking came `pendingSecs` ago: the rank has worked through them since, at its rate in state
   * `s` (a booking's tokens count in full until its `prefill_complete`, though the engine is most
   * of the way through a long prompt by then).
   */
  remainingPrefill(key: string, booked: number, pendingSecs: number, s: Readonly<RankState>): number {
    return booked > 0 ? Math.max(0, booked - pendingSecs / this.secondsPerToken(key, s)) : 0;
  }

  /**
   * Seconds a request waits for a free slot on a rank already running `max_num_seqs` requests:
   * its place in that queue times the time a slot takes to free (a request's decode, the mean
   * output tokens in steps of the rank's current length, over the slots).
   */
  slotWait(key: string, s: Readonly<RankState>): number {
    const excess = s.slots > 0 ? s.requests + 1 - s.slots : 0;
    return excess > 0 ? (excess * this.meanOutputTokens * this.stepSeconds(key, s)) / s.slots : 0;
  }

  /** Output tokens of a request on average (decayed over the last ~500 freed), for requests that do not say. */
  get meanOutputTokens(): number { return this.outputs.weight > 0 ? this.outputs.sum / this.outputs.weight : 0; }

  /** A booking freed after `tokens` output tokens. */
  observeOutput(tokens: number): void {
    const d = TTFT_FIT_FORGET;
    this.outputs.sum = this.outputs.sum * d + Math.max(0, tokens);
    this.outputs.weight = this.outputs.weight * d + 1;
  }

  /**
   * The rank's speed factor: its observed over predicted times (a ratio estimator over decayed
   * sums), moved toward 1 by {@link factorSe} standard errors and no further. Ranks of one kind differ by
   * their request mix and the fit's misfit alone; only a rank clearly slower or faster than the
   * fit keeps a factor (other hardware, another model size).
   */
  rankFactor(key: string): number {
    const f = this.ranks.get(key);
    if (!f || !(f.predicted > 0)) return 1;
    const r = ratioOf(f);
    const se = Math.sqrt(Math.max(0, f.oo - 2 * r * f.op + r * r * f.pp)) / f.predicted;
    const d = r - 1, slack = this.factorSe * se;
    return Math.abs(d) <= slack ? 1 : r - Math.sign(d) * slack;
  }

  /**
   * The rank's observed over predicted times as measured, not moved toward 1: the best estimate of
   * its relative slowness, for sharing load out by capacity (a rank of one kind off by chance
   * shifts its share a little, where in a prediction it would move traffic).
   */
  measuredFactor(key: string): number {
    const f = this.ranks.get(key);
    return f && f.predicted > 0 ? ratioOf(f) : 1;
  }

  /** A booking on rank `key` booked in state `s` saw its first token after `seconds`. */
  observe(key: string, s: Readonly<RankState>, seconds: number): void {
    if (!(seconds >= 0) || !Number.isFinite(seconds)) return;
    // the slot wait is modelled apart: the fit and the rank factor see the rest
    const y = Math.max(0, seconds - this.slotWait(key, s)), base = this.base(s);
    let f = this.ranks.get(key);
    if (!f) this.ranks.set(key, f = { observed: 0, predicted: 0, oo: 0, op: 0, pp: 0 });
    const d = RANK_DECAY;
    f.observed = f.observed * d + y;
    f.predicted = f.predicted * d + base;
    f.oo = f.oo * d + y * y;
    f.op = f.op * d + y * base;
    f.pp = f.pp * d + base * base;
    // the fit is pooled over the ranks (the factors only correct it: a fit that divided by them
    // would feed back on itself)
    this.fit(s, y);
  }

  removeRank(key: string): void { this.ranks.delete(key); }

  /** Current coefficients in natural units (inspection, tests). */
  coefficients(): { stepSec: number; perPrefillTokenSec: number; perContextTokenStepSec: number } {
    const t = this.theta;
    return { stepSec: t[0], perPrefillTokenSec: t[1] / TOKENS, perContextTokenStepSec: t[2] / CONTEXT };
  }

  /** Prediction before the rank factor; negative coefficients (noise early in a fit) count as 0. */
  private base(s: Readonly<RankState>): number {
    const x = this.x, t = this.theta;
    features(s, x);
    let y = 0;
    for (let i = 0; i < K; i++) y += Math.max(0, t[i]) * x[i];
    return y;
  }

  /**
   * One step of recursive least squares with forgetting, on relative errors: the observation is
   * weighted by 1 / its prediction squared, so a 20,000-token prefill that took 0.5 s informs the
   * fit as much as a 200-token one that took 20 ms (on absolute errors the many short ones would
   * decide the per-token cost of the rare long ones).
   */
  private fit(s: Readonly<RankState>, y: number): void {
    const x = this.x, p = this.p, px = this.px, t = this.theta, lam = TTFT_FIT_FORGET;
    const scale = 1 / Math.max(this.base(s), MIN_PREDICTION_SECS); // base() writes the features into x
    for (let i = 0; i < K; i++) x[i] *= scale;
    let denom = lam, err = y * scale;
    for (let i = 0; i < K; i++) {
      let v = 0;
      for (let j = 0; j < K; j++) v += p[i * K + j] * x[j];
      px[i] = v;
      denom += x[i] * v;
      err -= t[i] * x[i];
    }
    // a completion far off the fit (a client that reported late, a rank that stalled) moves it as
    // much as one three typical errors off, no more (Huber)
    const limit = 3 * Math.max(this.spread, 0.01);
    this.spread = this.spread * lam + Math.min(Math.abs(err), limit) * (1 - lam);
    err = Math.max(-limit, Math.min(limit, err));
    for (let i = 0; i < K; i++) t[i] += (px[i] / denom) * err;
    for (let i = 0; i < K; i++) for (let j = 0; j < K; j++) p[i * K + j] = (p[i * K + j] - (px[i] * px[j]) / denom) / lam;
    // forgetting inflates the directions the data never excites (ranks that always look alike):
    // no coefficient may grow more uncertain than its prior
    for (let i = 0; i < K; i++) {
      const over = p[i * K + i] / this.priorVar[i];
      if (over <= 1) continue;
      const f = 1 / Math.sqrt(over);
      for (let j = 0; j < K; j++) { p[i * K + j] *= f; p[j * K + i] *= f; }
    }
    this.samples++;
  }
}

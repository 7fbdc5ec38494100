/**
 * Metrics of one policy run: per-request outcomes from the engine model (cache hits, TTFT,
 * end-to-end latency, queue wait), periodic samples of every rank's active tokens and of the
 * hit rate, and the summary the CLI table, the JSON output and the page show.
 */
import type { EngineCounters, SimRequest } from './engine.js';

/** Nearest-rank percentiles and the mean, ms. */
export interface Percentiles { p50: number; p90: number; p99: number; mean: number }

/** The summary of one policy (JSON field names). */
export interface PolicyMetrics {
  policy: string;
  requests: number;
  /** Cached input tokens / input tokens (the engine's actual prefix-cache hits). */
  hit_rate: number;
  /** Cached blocks / referenced blocks. */
  block_hit_rate: number;
  input_tokens: number; cached_tokens: number; output_tokens: number; blocks: number; cached_blocks: number;
  ttft_ms: Percentiles;
  e2e_ms: Percentiles;
  /** Arrival to prefill start (the router's admission queue, a slot, the prefill server). */
  queue_wait_ms: Percentiles;
  /** Arrival to the end of selection: time in the core's admission queue (0 without queueing). */
  router_wait_ms: Percentiles;
  /** First arrival to last completion, seconds of simulated time. */
  makespan_s: number;
  throughput: { requests_per_s: number; input_tokens_per_s: number; output_tokens_per_s: number };
  /** max/mean active tokens over ranks, over the samples with any load. */
  load_imbalance: { mean: number; p90: number; max: number };
  stored_blocks: number;
  evicted_blocks: number;
  /** Engine work, summed over ranks: steps, tokens computed in prefill chunks (recompute included), recompute, tokens sampled. */
  steps: number;
  prefill_tokens: number;
  recomputed_tokens: number;
  decode_tokens: number;
  /** Running requests preempted for lack of KV blocks (they recompute later). */
  preemptions: number;
  /** Busy time over makespan, averaged over ranks. */
  utilization: number;
  /** KV events the index applied differently from the engine's own view (0 = consistent). */
  index_mismatches: number;
  /** Per rank: requests prefilled there, their hit rate and their TTFT (ms). */
  per_rank: { worker_id: number; dp_rank: number; requests: number; hit_rate: number; ttft_ms: Percentiles }[];
  /**
   * Samples: time, the hit rate over the last {@link HIT_RATE_WINDOW} sample intervals (null
   * before any prefill), and each rank's active tokens (`active_tokens[rank][sample]`).
   */
  series: { t_s: number[]; hit_rate: (number | null)[]; active_tokens: number[][] };
  /** TTFT histogram over fixed log-spaced edges (ms); counts[i] is [edges[i-1], edges[i]). */
  ttft_histogram: { edges_ms: number[]; counts: number[] };
  /** Wall-clock time of the run, ms (not deterministic; everything else is). */
  wall_ms: number;
}

/** Sample intervals the hit-rate series is smoothed over. */
export const HIT_RATE_WINDOW = 10;

/** Histogram edges: 10^(k/4) ms for k = 0..24 (1 ms .. 1,000 s). */
export const TTFT_EDGES_MS: readonly number[] = Array.from({ length: 25 }, (_, k) => Math.round(10 ** (k / 4) * 1000) / 1000);

/** Nearest-rank percentiles of `values` (sorted in place). */
export function percentiles(values: Float64Array): Percentiles {
  const n = values.length;
  if (n === 0) return { p50: 0, p90: 0, p99: 0, mean: 0 };
  values.sort();
  const at = (p: number): number => values[Math.min(n - 1, Math.max(0, Math.ceil((p / 100) * n) - 1))];
  let sum = 0;
  for (let i = 0; i < n; i++) sum += values[i];
  return { p50: at(50), p90: at(90), p99: at(99), mean: sum / n };
}

/** Collects outcomes and samples during a run. */
export class MetricsRecorder {
  private readonly ttft: Float64Array;
  private readonly e2e: Float64Array;
  private readonly wait: Float64Array;
  private readonly routerWait: Float64Array;
  private done = 0;
  private first = Infinity;
  private last = 0;
  private readonly totals = { input: 0, cached: 0, output: 0, blocks: 0, cachedBlocks: 0 };
  private readonly rankStats: { requests: number; input: number; cached: number; ttft: number[] }[];
  private window = { input: 0, cached: 0 };
  /** Per-sample window sums, for the rolling hit rate. */
  private readonly windows: { input: number; cached: number }[] = [];
  private readonly series: PolicyMetrics['series'];
  private readonly ratios: number[] = [];

  constructor(readonly policy: string, requests: number, private readonly ranks: readonly { workerId: bigint; dpRank: number }[]) {
    this.ttft = new Float64Array(requests);
    this.e2e = new Float64Array(requests);
    this.wait = new Float64Array(requests);
    this.routerWait = new Float64Array(requests);
    this.rankStats = ranks.map(() => ({ requests: 0, input: 0, cached: 0, ttft: [] }));
    this.series = { t_s: [], hit_rate: [], active_tokens: ranks.map(() => []) };
  }

  /** A request's prefill finished on rank `rank` (index into the fleet's ranks). */
  prefilled(r: SimRequest, rank: number): void {
    this.window.input += r.isl;
    this.window.cached += r.cachedTokens;
    const s = this.rankStats[rank];
    s.requests++; s.input += r.isl; s.cached += r.cachedTokens;
    s.ttft.push(r.prefillEnd - r.arrival);
  }

  /** A request finished. */
  finished(r: SimRequest): void {
    const i = this.done++;
    this.ttft[i] = r.prefillEnd - r.arrival;
    this.e2e[i] = r.end - r.arrival;
    this.wait[i] = r.prefillStart - r.arrival;
    this.routerWait[i] = r.routed - r.arrival;
    this.first = Math.min(this.first, r.arrival);
    this.last = Math.max(this.last, r.end);
    const t = this.totals;
    t.input += r.isl; t.cached += r.cachedTokens; t.output += r.osl; t.blocks += r.keys.length; t.cachedBlocks += r.cachedBlocks;
  }

  /** One sample at virtual time `tMs`: the recent hit rate and each rank's load. */
  sample(tMs: number, activeTokens: readonly number[]): void {
    const s = this.series;
    s.t_s.push(tMs / 1000);
    this.windows.push(this.window);
    this.window = { input: 0, cached: 0 };
    let input = 0, cached = 0;
    for (const w of this.windows.slice(-HIT_RATE_WINDOW)) { input += w.input; cached += w.cached; }
    s.hit_rate.push(input > 0 ? cached / input : null);
    let sum = 0, max = 0;
    activeTokens.forEach((a, i) => { s.active_tokens[i].push(a); sum += a; max = Math.max(max, a); });
    if (sum > 0) this.ratios.push(max / (sum / activeTokens.length));
  }

  /** The summary; `extra` carries the event counters of the run. */
  summary(extra: { stored: number; evicted: number; mismatches: number; wallMs: number; engines: readonly EngineCounters[] }): PolicyMetrics {
    const t = this.totals;
    const span = Math.max(1e-9, (this.last - this.first) / 1000);
    const counts = new Array<number>(TTFT_EDGES_MS.length + 1).fill(0);
    for (let i = 0; i < this.done; i++) {
      let b = 0;
      while (b < TTFT_EDGES_MS.length && this.ttft[i] >= TTFT_EDGES_MS[b]) b++;
      counts[b]++;
    }
    const ratios = Float64Array.from(this.ratios);
    const imb = percentiles(ratios);
    return {
      policy: this.policy, requests: this.done,
      hit_rate: t.input > 0 ? t.cached / t.input : 0, block_hit_rate: t.blocks > 0 ? t.cachedBlocks / t.blocks : 0,
      input_tokens: t.input, cached_tokens: t.cached, output_tokens: t.output, blocks: t.blocks, cached_blocks: t.cachedBlocks,
      ttft_ms: percentiles(this.ttft.subarray(0, this.done)),
      e2e_ms: percentiles(this.e2e.subarray(0, this.done)),
      queue_wait_ms: percentiles(this.wait.subarray(0, this.done)),
      router_wait_ms: percentiles(this.routerWait.subarray(0, this.done)),
      makespan_s: span,
      throughput: { requests_per_s: this.done / span, input_tokens_per_s: t.input / span, output_tokens_per_s: t.output / span },
      load_imbalance: { mean: imb.mean, p90: imb.p90, max: ratios.length > 0 ? ratios[ratios.length - 1] : 0 },
      stored_blocks: extra.stored, evicted_blocks: extra.evicted, index_mismatches: extra.mismatches,
      ...engineTotals(extra.engines, span),
      per_rank: this.ranks.map((r, i) => ({
        worker_id: Number(r.workerId), dp_rank: r.dpRank, requests: this.rankStats[i].requests,
        hit_rate: this.rankStats[i].input > 0 ? this.rankStats[i].cached / this.rankStats[i].input : 0,
        ttft_ms: percentiles(Float64Array.from(this.rankStats[i].ttft)),
      })),
      series: this.series,
      ttft_histogram: { edges_ms: [...TTFT_EDGES_MS], counts },
      wall_ms: extra.wallMs,
    };
  }
}

/** Engine counters summed over ranks. */
function engineTotals(engines: readonly EngineCounters[], spanS: number): Pick<PolicyMetrics,
  'steps' | 'prefill_tokens' | 'recomputed_tokens' | 'decode_tokens' | 'preemptions' | 'utilization'> {
  const sum = (f: (e: EngineCounters) => number): number => engines.reduce((s, e) => s + f(e), 0);
  return {
    steps: sum((e) => e.steps), prefill_tokens: sum((e) => e.prefillTokens), recomputed_tokens: sum((e) => e.recomputedTokens),
    decode_tokens: sum((e) => e.decodeTokens), preemptions: sum((e) => e.preemptions),
    utilization: engines.length > 0 ? sum((e) => e.busyMs) / 1000 / spanS / engines.length : 0,
  };
}

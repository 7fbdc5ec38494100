/**
 * The seeded distributions the workload generators draw from, over the project's one seeded
 * generator (core/random.ts, sfc32): exponential gaps (Poisson arrivals), clipped lognormal
 * lengths, Zipf popularity. Each draw reads the generator a fixed number of times, so a
 * generator's output depends only on its seed and its knobs.
 */
import { seededRng, type Rng } from '../../core/random.js';

/** An exponential draw of mean `mean` (the gap between Poisson arrivals of rate 1 / mean). */
export function exponential(rng: Rng, mean: number): number {
  return -mean * Math.log(1 - rng.next());
}

/**
 * A token count: lognormal with median `median` and shape `spread` (the sigma of its log; 0 is
 * the median itself), rounded and clipped to [median / 4, median x 4] and to at least 1. Clipping
 * keeps a rare draw from producing a prompt many times the median (lognormal tails are long)
 * while the bulk keeps the skew real prompt lengths show.
 */
export function lengthDraw(rng: Rng, median: number, spread: number): number {
  // Box-Muller, one normal per call (two uniforms): a fixed number of reads per draw
  const u = 1 - rng.next(), v = rng.next();
  const z = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  const x = median * Math.exp(spread * z);
  return Math.max(1, Math.round(Math.min(median * 4, Math.max(median / 4, x))));
}

/** A whole number uniform in [lo, hi]. */
export function uniformInt(rng: Rng, lo: number, hi: number): number {
  return lo + Math.floor(rng.next() * (hi - lo + 1));
}

/**
 * `n` whole numbers in [lo, hi], one drawn uniformly in each of `n` equal slices of the range,
 * in random order. Each is uniform in [lo, hi] as an independent draw would be, but the set's
 * mean hardly varies between seeds: with a few large items (doc_qa's 16 documents) independent
 * draws moved the mean length, and with it the workload's cost and TTFT, by up to a third from
 * one seed to the next.
 */
export function stratifiedInts(rng: Rng, n: number, lo: number, hi: number): number[] {
  const width = (hi - lo + 1) / n;
  const out = Array.from({ length: n }, (_, k) => Math.min(hi, lo + Math.floor((k + rng.next()) * width)));
  for (let k = n - 1; k > 0; k--) {
    const j = uniformInt(rng, 0, k);
    [out[k], out[j]] = [out[j], out[k]];
  }
  return out;
}

/** Zipf over `n` items: item k (0-based) has weight 1 / (k + 1)^s; s = 0 is uniform. */
export class Zipf {
  private readonly cdf: Float64Array;

  constructor(n: number, s: number) {
    this.cdf = new Float64Array(n);
    let sum = 0;
    for (let k = 0; k < n; k++) { sum += 1 / (k + 1) ** s; this.cdf[k] = sum; }
    for (let k = 0; k < n; k++) this.cdf[k] /= sum;
  }

  /** The item of one draw. */
  draw(rng: Rng): number {
    const u = rng.next(), cdf = this.cdf;
    let lo = 0, hi = cdf.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cdf[mid] > u) hi = mid; else lo = mid + 1;
    }
    return lo;
  }
}

/** An independent generator for part `k` of the workload of seed `seed` (tenant k of a mix). */
export function partRng(seed: number, k: number): Rng {
  // golden-ratio stride: parts of one seed, and equal parts of nearby seeds, get unrelated streams
  return seededRng(BigInt.asUintN(64, BigInt(seed) * 0x9e3779b97f4a7c15n + BigInt(k) * 0xbf58476d1ce4e5b9n + 0x5eedn));
}

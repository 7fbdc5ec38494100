/** Timing of repeated calls for the benches that report percentiles of single calls. */

/** Milliseconds of `reps` runs of `f` (sorted ascending), after `warmup` untimed runs; `f` gets the run index (negative while warming up). */
export async function timings(reps: number, warmup: number, f: (i: number) => unknown): Promise<number[]> {
  const ms: number[] = [];
  for (let i = -warmup; i < reps; i++) {
    const t0 = performance.now();
    await f(i);
    if (i >= 0) ms.push(performance.now() - t0);
  }
  return ms.sort((a, b) => a - b);
}

/** The q-quantile (0..1) of sorted values. */
export const quantile = (sorted: readonly number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))];

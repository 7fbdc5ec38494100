/**
 * The simulation: a trace replayed against a simulated fleet once per policy (run.ts), each
 * time with a fresh real SelectionCore, at an arrival speed given directly (`speed`) or as a
 * fraction of the fleet's measured saturation throughput (`load`, saturation.ts).
 *
 * Deterministic for a seed: time is virtual, every policy's core gets `seededRng(seed)`, and
 * equal-time events run in scheduling order. Only `wall_ms` varies between runs.
 */
import { BlockIds } from './block-ids.js';
import { fleetConfig, workerParams, type FleetConfig } from './fleet.js';
import type { PolicyMetrics } from './metrics.js';
import { parsePolicies, type PolicySpec } from './policies.js';
import { runPolicy, type RunSettings } from './run.js';
import { loadSpeed, saturationOf, type Saturation } from './saturation.js';
import type { Trace } from './trace.js';

export { DEFAULT_KNOBS, expectedOutputOf, type ExpectedOutput, type SimProgress } from './run.js';

export interface SimulationOptions extends RunSettings {
  fleet?: Partial<FleetConfig>;
  /** Specs or a comma-separated list (default `ttft,kv,llmd,sglang_cache_aware,ray_prefix_affinity,round_robin`). */
  policies?: readonly PolicySpec[] | string;
  /** Arrival-time compression: 2 replays the trace twice as fast (default 1). */
  speed?: number;
  /**
   * Arrival rate as a fraction of the fleet's saturation throughput for this trace (0.85: 85%);
   * sets the speed, and replaces `speed`. The saturation is measured (saturation.ts) once per
   * trace, fleet and seed, unless `saturation` gives it.
   */
  load?: number;
  /** The saturation throughput to use with `load`, requests/s (skips the measurement). */
  saturation?: number;
}

export interface SimulationResult {
  fleet: FleetConfig;
  seed: number;
  speed: number;
  requests: number;
  /** With `load`: the load, and the saturation it is a fraction of. */
  load?: number;
  saturation?: Saturation;
  policies: PolicyMetrics[];
}

export const DEFAULT_POLICIES = 'ttft,kv,llmd,sglang_cache_aware,ray_prefix_affinity,round_robin';

/** Run every policy over `trace` on the same fleet, one after another. */
export async function simulate(trace: Trace, o: SimulationOptions = {}): Promise<SimulationResult> {
  const fleet = fleetConfig(o.fleet);
  const specs = typeof o.policies === 'string' || o.policies === undefined ? parsePolicies(o.policies ?? DEFAULT_POLICIES) : o.policies;
  const ids = new BlockIds(trace, fleet.blockSize);
  checkFits(trace, ids, fleet);
  let speed = o.speed ?? 1;
  let saturation: Saturation | undefined;
  if (o.load !== undefined) {
    if (!(o.load > 0 && Number.isFinite(o.load))) throw new Error(`load must be a positive number (got ${o.load})`);
    saturation = await saturationOf(trace, fleet, { seed: o.seed, given: o.saturation, onProgress: o.onProgress });
    speed = loadSpeed(trace, saturation.requests_per_s, o.load);
  }
  if (!(speed > 0 && Number.isFinite(speed))) throw new Error(`speed must be a positive number (got ${speed})`);
  const out: PolicyMetrics[] = [];
  for (let k = 0; k < specs.length; k++) {
    out.push(await runPolicy(trace, ids, fleet, specs[k], { ...o, speed, index: k, count: specs.length }));
  }
  return { fleet, seed: o.seed ?? 0, speed, requests: trace.length, ...(saturation && { load: o.load, saturation }), policies: out };
}

/** Every request must fit one rank's KV memory on its own (vLLM rejects longer ones at admission); on the smallest rank of a mixed fleet. */
function checkFits(trace: Trace, ids: BlockIds, fleet: FleetConfig): void {
  let worst = 0, at = 0;
  for (let i = 0; i < trace.length; i++) {
    const isl = ids.isl(i);
    const blocks = Math.ceil(Math.max(isl, isl + trace.outputLength[i] - 1) / fleet.blockSize);
    if (blocks > worst) { worst = blocks; at = i; }
  }
  const capacity = Math.min(...workerParams(fleet).map((p) => p.capacityBlocks));
  if (worst > capacity) {
    throw new Error(`request ${at} needs ${worst} KV blocks, more than a rank's ${capacity}: raise capacityBlocks`);
  }
}

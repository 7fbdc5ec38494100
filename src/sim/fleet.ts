/**
 * The simulated fleet: how many workers, their data-parallel ranks and the engine model of every
 * rank, and how the workers are registered with the selection core (as a runtime would `POST
 * /workers`).
 */
import type { SelectionCore } from '../core/core.js';
import { TRACE_BLOCK_TOKENS } from './trace.js';
import type { EngineParams } from './engine.js';
import { DEFAULT_PROFILE, perfProfile, type StepCost } from './perf-model.js';

/** Model and routing group of the simulated partition. */
export const SIM_MODEL = 'sim-model';
export const SIM_GROUP = 'default';

export interface FleetConfig extends Omit<EngineParams, 'cost'> {
  workers: number;
  /** Data-parallel ranks per worker (each rank is an engine with its own cache). */
  dpRanks: number;
  /** Step-time profile (perf-model.ts) of every rank. */
  profile: string;
  /** Coefficients replacing the profile's (tests, what-if runs). */
  stepCost?: Partial<StepCost>;
  /**
   * A heterogeneous fleet: groups of workers in worker-id order (their `workers` sum to the
   * fleet's), each with its own profile and, where given, KV capacity and step budget (else the
   * fleet's). Each worker registers its own `total_kv_blocks` and `max_num_batched_tokens`.
   */
  kinds?: readonly WorkerKind[];
}

/** A group of identical workers of a heterogeneous fleet. */
export interface WorkerKind {
  workers: number;
  profile: string;
  capacityBlocks?: number;
  maxBatchedTokens?: number;
  maxConcurrent?: number;
}

/**
 * Defaults: 8 workers of one rank, block size 512 (the trace's own granularity: finer blocks add
 * no information, only work), 1,024 blocks (524,288 tokens) of KV per rank — what
 * Llama-3.1-8B leaves free on an 80 GB GPU (BLIS records 29,205 vLLM blocks of 16 tokens,
 * 467,280 tokens, at TP1) — the Llama-3.1-8B / H100 step profile, up to 64 running requests per
 * rank (max_num_seqs) and a step budget (max_num_batched_tokens) of 16,384 tokens.
 */
export const DEFAULT_FLEET: Readonly<FleetConfig> = Object.freeze({
  workers: 8, dpRanks: 1, blockSize: TRACE_BLOCK_TOKENS, capacityBlocks: 1024,
  maxConcurrent: 64, maxBatchedTokens: 16_384, profile: DEFAULT_PROFILE,
});

/** The engine parameters of a fleet's ranks (the profile's step cost, with any overrides); of worker 0's for a heterogeneous fleet. */
export function engineParams(f: FleetConfig): EngineParams {
  return workerParams(f)[0];
}

/** The engine parameters of each worker (index = worker id - 1); every rank of a worker shares them. */
export function workerParams(f: FleetConfig): EngineParams[] {
  const kinds = f.kinds ?? [{ workers: f.workers, profile: f.profile }];
  return kinds.flatMap((k) => {
    const p: EngineParams = {
      blockSize: f.blockSize, capacityBlocks: k.capacityBlocks ?? f.capacityBlocks, maxConcurrent: k.maxConcurrent ?? f.maxConcurrent,
      maxBatchedTokens: k.maxBatchedTokens ?? f.maxBatchedTokens, cost: overDefaults(perfProfile(k.profile).cost, f.stepCost),
    };
    return Array.from({ length: k.workers }, () => p);
  });
}

/** `defaults` with the keys `o` defines (an `undefined` value keeps the default). */
export function overDefaults<T extends object>(defaults: Readonly<T>, o: Partial<T> = {}): T {
  const out = { ...defaults };
  for (const [k, v] of Object.entries(o)) if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  return out;
}

/**
 * A fleet from partial settings over the defaults. When the block size changes and no capacity
 * is given, the capacity keeps the default token budget. Throws an Error listing bad values.
 */
export function fleetConfig(o: Partial<FleetConfig> = {}): FleetConfig {
  const blockSize = o.blockSize ?? DEFAULT_FLEET.blockSize;
  const f: FleetConfig = {
    ...overDefaults(DEFAULT_FLEET, o),
    capacityBlocks: o.capacityBlocks ?? (DEFAULT_FLEET.capacityBlocks * DEFAULT_FLEET.blockSize) / blockSize,
  };
  const bad: string[] = [];
  const int = (k: 'workers' | 'dpRanks' | 'blockSize' | 'maxConcurrent' | 'maxBatchedTokens', min: number): void => {
    const v = f[k];
    if (!(Number.isInteger(v) && v >= min)) bad.push(`${k} must be an integer >= ${min} (got ${v})`);
  };
  int('workers', 1); int('dpRanks', 1); int('blockSize', 1); int('maxConcurrent', 1); int('maxBatchedTokens', 1);
  if (!(f.capacityBlocks >= 1) || (Number.isFinite(f.capacityBlocks) && !Number.isInteger(f.capacityBlocks))) {
    bad.push(`capacityBlocks must be an integer >= 1 or Infinity (got ${f.capacityBlocks})`);
  }
  try { perfProfile(f.profile); } catch (err) { bad.push((err as Error).message); }
  if (f.kinds) checkKinds(f, bad);
  for (const [k, v] of Object.entries(f.stepCost ?? {}) as [string, number][]) {
    if (!(Number.isFinite(v) && v >= 0)) bad.push(`stepCost.${k} must be a number >= 0 (got ${v})`);
  }
  if (TRACE_BLOCK_TOKENS % f.blockSize !== 0) bad.push(`blockSize must divide ${TRACE_BLOCK_TOKENS} (got ${f.blockSize})`);
  if (bad.length > 0) throw new Error(`invalid fleet: ${bad.join('; ')}`);
  return f;
}

function checkKinds(f: FleetConfig, bad: string[]): void {
  const sum = f.kinds!.reduce((a, k) => a + k.workers, 0);
  if (sum !== f.workers) bad.push(`kinds must add up to the fleet's ${f.workers} workers (they add up to ${sum})`);
  f.kinds!.forEach((k, i) => {
    if (!(Number.isInteger(k.workers) && k.workers >= 1)) bad.push(`kinds[${i}].workers must be an integer >= 1 (got ${k.workers})`);
    try { perfProfile(k.profile); } catch (err) { bad.push(`kinds[${i}]: ${(err as Error).message}`); }
    for (const key of ['capacityBlocks', 'maxBatchedTokens', 'maxConcurrent'] as const) {
      const v = k[key];
      if (v !== undefined && !(v >= 1 && (Number.isInteger(v) || (key === 'capacityBlocks' && v === Infinity)))) {
        bad.push(`kinds[${i}].${key} must be an integer >= 1 (got ${v})`);
      }
    }
  });
}

/**
 * Fleets by name (`--fleet`, the grid's `--fleets`): `WxR` is W workers of R data-parallel ranks
 * (8x1, 16x2, 64x1, ...); `mixed` is 8 workers of one rank, workers 1-4 Llama-3.1-8B on H100 and
 * 5-8 the same model on A100-80GB (two profiles, the A100 about 2.8x slower to prefill). Both are
 * 80 GB GPUs serving the same model, so their KV budgets are the same 1,024 blocks per rank.
 */
export function namedFleet(name: string): Partial<FleetConfig> {
  const n = name.trim();
  if (n === 'mixed') {
    return { workers: 8, dpRanks: 1, kinds: [{ workers: 4, profile: 'llama3.1-8b-h100' }, { workers: 4, profile: 'llama3.1-8b-a100' }] };
  }
  const m = /^(\d+)x(\d+)$/.exec(n);
  const workers = m ? Number(m[1]) : NaN, dpRanks = m ? Number(m[2]) : NaN;
  if (!(workers >= 1 && workers <= 10_000 && dpRanks >= 1 && dpRanks <= 256)) {
    throw new Error(`unknown fleet "${name}": WORKERSxRANKS (e.g. 8x1, 16x2; at most 10000 workers of 256 ranks) or mixed`);
  }
  return { workers, dpRanks };
}

/** The profile(s) of a fleet, for headers: `llama3.1-8b-h100`, or `4 x llama3.1-8b-h100 + 4 x llama3.1-8b-a100`. */
export function profileText(f: FleetConfig): string {
  return f.kinds ? f.kinds.map((k) => `${k.workers} x ${k.profile}`).join(' + ') : f.profile;
}

/** Ranks of a fleet (workers x DP ranks). */
export function fleetRanks(f: Pick<FleetConfig, 'workers' | 'dpRanks'>): number {
  return f.workers * f.dpRanks;
}

/** Worker ids 1..workers. */
export function workerIds(f: FleetConfig): bigint[] {
  return Array.from({ length: f.workers }, (_, i) => BigInt(i + 1));
}

/** Register every worker with `core` (schedulable, KV events on, one endpoint per rank). */
export function registerFleet(core: SelectionCore, f: FleetConfig): void {
  const params = workerParams(f);
  for (const id of workerIds(f)) {
    const p = params[Number(id) - 1];
    const eps: Record<string, string> = {};
    for (let r = 0; r < f.dpRanks; r++) eps[String(r)] = `sim://worker-${id}/rank-${r}`;
    const rec = core.upsertWorker({
      worker_id: id, model_name: SIM_MODEL, routing_group: SIM_GROUP, endpoint: `sim://worker-${id}`,
      block_size: f.blockSize, data_parallel_size: f.dpRanks, kv_events_endpoints: eps,
      total_kv_blocks: Number.isFinite(p.capacityBlocks) ? p.capacityBlocks : undefined,
      max_num_batched_tokens: p.maxBatchedTokens, max_num_seqs: p.maxConcurrent,
    });
    if (rec.lifecycle !== 'schedulable') throw new Error(`simulated worker ${id} is not schedulable: ${rec.not_schedulable_reasons?.join('; ')}`);
  }
}

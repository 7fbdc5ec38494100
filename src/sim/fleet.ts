/**
 * The simulated fleet: how many workers, their data-parallel ranks and the engine model of every
 * rank, and how the workers are registered with the selection core (as a runtime would `POST
 * /workers`).
 */
import type { SelectionCore } from '../core/core.js';
import { TRACE_BLOCK_TOKENS } from './trace.js';
import type { EngineParams } from './engine.js';

/** Model and routing group of the simulated partition. */
export const SIM_MODEL = 'sim-model';
export const SIM_GROUP = 'default';

export interface FleetConfig extends EngineParams {
  workers: number;
  /** Data-parallel ranks per worker (each rank is an engine with its own cache). */
  dpRanks: number;
  /** Each worker's `max_num_batched_tokens` (the router queue's busy threshold scales it). */
  maxBatchedTokens: number;
}

/**
 * Defaults: 8 workers of one rank, block size 512 (the trace's own granularity: finer blocks add
 * no information, only work), 1,024 blocks (524,288 tokens) of KV per rank — about what an
 * 8B model leaves free on an 80 GB GPU — prefill 20,000 tokens/s, decode 50 tokens/s per request
 * and up to 64 running requests per rank; `max_num_batched_tokens` 16,384.
 */
export const DEFAULT_FLEET: Readonly<FleetConfig> = Object.freeze({
  workers: 8, dpRanks: 1, blockSize: TRACE_BLOCK_TOKENS, capacityBlocks: 1024,
  prefillTokensPerSec: 20_000, decodeTokensPerSec: 50, maxConcurrent: 64, maxBatchedTokens: 16_384,
});

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
  const int = (k: keyof FleetConfig, min: number): void => {
    const v = f[k];
    if (!(Number.isInteger(v) && v >= min)) bad.push(`${k} must be an integer >= ${min} (got ${v})`);
  };
  int('workers', 1); int('dpRanks', 1); int('blockSize', 1); int('maxConcurrent', 1); int('maxBatchedTokens', 1);
  if (!(f.capacityBlocks >= 1) || (Number.isFinite(f.capacityBlocks) && !Number.isInteger(f.capacityBlocks))) {
    bad.push(`capacityBlocks must be an integer >= 1 or Infinity (got ${f.capacityBlocks})`);
  }
  for (const k of ['prefillTokensPerSec', 'decodeTokensPerSec'] as const) {
    if (!(Number.isFinite(f[k]) && f[k] > 0)) bad.push(`${k} must be a positive number (got ${f[k]})`);
  }
  if (TRACE_BLOCK_TOKENS % f.blockSize !== 0) bad.push(`blockSize must divide ${TRACE_BLOCK_TOKENS} (got ${f.blockSize})`);
  if (bad.length > 0) throw new Error(`invalid fleet: ${bad.join('; ')}`);
  return f;
}

/** Worker ids 1..workers. */
export function workerIds(f: FleetConfig): bigint[] {
  return Array.from({ length: f.workers }, (_, i) => BigInt(i + 1));
}

/** Register every worker with `core` (schedulable, KV events on, one endpoint per rank). */
export function registerFleet(core: SelectionCore, f: FleetConfig): void {
  for (const id of workerIds(f)) {
    const eps: Record<string, string> = {};
    for (let r = 0; r < f.dpRanks; r++) eps[String(r)] = `sim://worker-${id}/rank-${r}`;
    const rec = core.upsertWorker({
      worker_id: id, model_name: SIM_MODEL, routing_group: SIM_GROUP, endpoint: `sim://worker-${id}`,
      block_size: f.blockSize, data_parallel_size: f.dpRanks, kv_events_endpoints: eps,
      total_kv_blocks: Number.isFinite(f.capacityBlocks) ? f.capacityBlocks : undefined,
      max_num_batched_tokens: f.maxBatchedTokens,
    });
    if (rec.lifecycle !== 'schedulable') throw new Error(`simulated worker ${id} is not schedulable: ${rec.not_schedulable_reasons?.join('; ')}`);
  }
}

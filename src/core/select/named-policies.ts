/**
 * The named routing policies (`--routing-policy NAME[:key=value...]`) as policy instances of one
 * partition. `kv` is the core's built-in dense cost path and has no instance here (null); every
 * other name is a {@link WorkerSelectionPolicy} built from what the partition offers it.
 */
import type { Clock } from '../random.js';
import type { TtftModel } from '../load/ttft-model.js';
import type { PolicyPartition, WorkerSelectionPolicy } from './policy.js';
import type { RoutingPolicyKind } from './routing-policy.js';
import { createTtftPolicy } from './ttft.js';
import { createLlmdPolicy } from './peers/llmd.js';
import { createSglangCacheAwarePolicy } from './peers/sglang-cache-aware.js';
import { createRayPrefixAffinityPolicy } from './peers/ray-prefix-affinity.js';

/** What a named policy may read of its partition. */
export interface RoutingInputs {
  /** The partition's learned time-to-first-token model. */
  model(): TtftModel;
  /** KV blocks a rank holds on device, as the KV index sees them. */
  heldBlocks(workerId: bigint, dpRank: number): number;
  /**
   * Live bookings of the partition whose prompt shares the first `blocks` blocks of `prefixWords`
   * (its chained block hashes as u32 pairs): how much of the traffic that prefix is right now.
   */
  liveSharing(prefixWords: Uint32Array, blocks: number): number;
  /** The core's clock (time-based eviction of a policy's own state). */
  readonly clock: Clock;
}

/** The policy instance of `kind` for one partition, or null for `kv` (the built-in cost). */
export function createRoutingPolicy(kind: RoutingPolicyKind, partition: PolicyPartition, params: Readonly<Record<string, number>>,
  inputs: RoutingInputs): WorkerSelectionPolicy | null {
  switch (kind) {
    case 'kv': return null;
    case 'ttft': return createTtftPolicy(partition, params, inputs);
    case 'llmd': return createLlmdPolicy(params);
    case 'sglang_cache_aware': return createSglangCacheAwarePolicy(partition, params, inputs);
    case 'ray_prefix_affinity': return createRayPrefixAffinityPolicy(partition, params, inputs);
  }
}

/**
 * The `/dump` format (Dynamo's recovery format): per `"model:group"` partition, its block size and
 * the index as `RouterEvent`s. One schema reads it wherever it arrives: start-up recovery from a
 * peer's `/dump`, and the OpenAPI document. u64 fields accept numbers or bigints (the u64-exact
 * JSON parser gives bigints beyond 2^53) and come out as bigint.
 */
import * as z from 'zod';
import { TIER_NAMES } from '../index/index-types.js';
import type { RouterEvent } from '../index/kv-index.js';
import { u32, u64 } from './schemas.js';

const StoredBlockSchema = z.object({ block_hash: u64(), tokens_hash: u64() })
  .transform((b) => ({ block_hash: b.block_hash, tokens_hash: b.tokens_hash, mm_extra_info: null }));

const EventDataSchema = z.union([
  z.literal('cleared'),
  z.object({
    stored: z.object({ parent_hash: u64().nullish(), blocks: z.array(StoredBlockSchema) })
      .transform((s) => ({ parent_hash: s.parent_hash ?? null, start_position: null, blocks: s.blocks })),
  }),
  z.object({ removed: z.object({ block_hashes: z.array(u64()) }) }),
]);

/** One event of a worker rank's cache (device or another tier). */
export const RouterEventSchema: z.ZodType<RouterEvent, unknown> = z.object({
  worker_id: u64(),
  storage_tier: z.enum(TIER_NAMES).optional().default('device'),
  event: z.object({
    event_id: z.union([u32(), u64()]).optional().default(0).transform(Number),
    dp_rank: u32().optional().default(0),
    data: EventDataSchema,
  }),
});

/** One partition of a dump: its events, or the error that kept it from being dumped. */
export const DumpPartitionSchema = z.union([
  z.object({ block_size: u32(), events: z.array(RouterEventSchema) }),
  z.object({ error: z.string() }),
]);

/** A whole dump: `"model:group"` -> partition. */
export const DumpSchema = z.record(z.string(), DumpPartitionSchema);

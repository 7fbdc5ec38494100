/**
 * Building vLLM-format KV-event batches in tests: msgpack packing with exact u64 hashes, map
 * events as vLLM 0.26 writes them, token ranges, and the captured fixtures.
 */
import { readFileSync } from 'node:fs';
import { Packr } from 'msgpackr';

const packr = new Packr({ useRecords: false, useBigInt64: true, largeBigIntToFloat: false } as never);

/** msgpack bytes of any value (bigints as uint64/int64, as engines write them). */
export const pack = (v: unknown): Buffer => packr.pack(v);

/** `n` consecutive token ids from `first`. */
export const tokenRange = (first: number, n: number): number[] => Array.from({ length: n }, (_, i) => first + i);

/** Fields of a map BlockStored event beyond the required ones. */
export interface StoredExtras {
  medium?: string | null; lora_name?: string | null; cache_salt?: string; extra_keys?: unknown[] | null;
  group_idx?: number; kv_cache_spec_kind?: string; block_size?: number;
}

/** A BlockStored map event (vLLM 0.26 field names). */
export function storedEvent(hashes: (number | bigint)[], parent: number | bigint | null, tokens: unknown[], x: StoredExtras = {}): Record<string, unknown> {
  return {
    type: 'BlockStored', block_hashes: hashes, parent_block_hash: parent, token_ids: tokens,
    block_size: x.block_size ?? 16, lora_id: null, medium: x.medium ?? 'GPU', lora_name: x.lora_name ?? null, ...x,
  };
}

/** A BlockRemoved map event. */
export const removedEvent = (hashes: (number | bigint)[], medium: string | null = 'GPU', groupIdx?: number): Record<string, unknown> =>
  ({ type: 'BlockRemoved', block_hashes: hashes, medium, ...(groupIdx === undefined ? {} : { group_idx: groupIdx }) });

/** An AllBlocksCleared map event. */
export const clearedEvent = (): Record<string, unknown> => ({ type: 'AllBlocksCleared' });

/** A packed batch `[ts, events, dp_rank]` (vLLM 0.26 array batch). */
export const batch = (events: unknown[], dpRank: number | null = null): Buffer => pack([1700000000, events, dpRank]);

/** One line of a captured fixture file. */
export interface FixtureLine {
  seq: number; topic: string; step: string; payload_hex: string;
  fields: { ts: number; data_parallel_rank?: number | null; events: Record<string, unknown>[] };
}

/** The captured vLLM fixtures (this file compiles to build/dist/test/support/). */
export const FIXTURE_DIR = new URL('../../../../test/fixtures/vllm-kv-events/', import.meta.url);

/** Every line of a fixture file. */
export function fixtureLines(file: string): FixtureLine[] {
  return readFileSync(new URL(file, FIXTURE_DIR), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as FixtureLine);
}

/** A fixture hash (`"123"`, 123 or `{$bytes}`) as its u64 identity (bytes: last 8 big-endian). */
export function fixtureHash(v: unknown): bigint {
  if (typeof v === 'string' || typeof v === 'number') return BigInt(v);
  const hex = (v as { $bytes: string }).$bytes;
  return BigInt.asUintN(64, BigInt('0x' + hex));
}

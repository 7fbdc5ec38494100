/**
 * The simulated engines' KV events, applied to the real index of the partition: what a real
 * engine's `BlockStored` / `BlockRemoved` would become after the service's ZMQ ingress decoded
 * them (engine block hash + token-content hash per block, the parent's engine hash), through the
 * same {@link KvIndex.stored} / {@link KvIndex.removed} calls.
 */
import { Tier, type BlockRef } from '../core/index/index-types.js';
import type { KvIndex } from '../core/index/kv-index.js';
import type { BlockIds } from './block-ids.js';
import type { KvEventSink } from './engine.js';

export class IndexSink implements KvEventSink {
  /** Blocks announced as stored / removed. */
  storedBlocks = 0;
  /** Events the index applied differently from what the engine believes (0 when they agree). */
  mismatches = 0;

  constructor(private readonly index: KvIndex, private readonly ids: BlockIds) {}

  stored(workerId: bigint, dpRank: number, parent: number | null, keys: readonly number[]): void {
    const blocks: BlockRef[] = new Array(keys.length);
    for (let i = 0; i < keys.length; i++) blocks[i] = { ext: this.ids.ext(keys[i]), local: this.ids.local(keys[i]) };
    const got = this.index.stored(workerId, dpRank, Tier.Device, parent === null ? null : this.ids.ext(parent), blocks);
    if (got !== keys.length) this.mismatches++;
    this.storedBlocks += keys.length;
  }

  removed(workerId: bigint, dpRank: number, keys: readonly number[]): void {
    const hashes = keys.map((k) => this.ids.ext(k));
    if (this.index.removed(workerId, dpRank, Tier.Device, hashes) !== keys.length) this.mismatches++;
  }
}

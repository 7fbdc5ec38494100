/** The overlap selection and /overlap_scores share (select/overlap.ts): rows of every rank, and the predicted side index merged as Dynamo does. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KvIndex, type RankOverlap } from '../../../src/core/index/kv-index.js';
import { Tier } from '../../../src/core/index/index-types.js';
import { mergePredicted, overlapScoreRows } from '../../../src/core/select/overlap.js';
import type { RankRef } from '../../../src/core/catalog/partition.js';
import type { WorkerEntry } from '../../../src/core/catalog/catalog.js';

const W = { overlapScoreCredit: 1, hostCacheHitWeight: 0.75, diskCacheHitWeight: 0.25 };
const blocks = (exts: number[], locals: number[]) => exts.map((e, i) => ({ ext: BigInt(e), local: BigInt(locals[i]) }));
const rank = (workerId: bigint, dpRank: number): RankRef =>
  ({ entry: { req: { worker_id: workerId } } as unknown as WorkerEntry, dpRank, key: `${workerId}:${dpRank}` });
const byKey = (rows: RankOverlap[]) => new Map(rows.map((r) => [r.key, r]));

test('overlap rows credit device, host extension and weights (Dynamo test value: 1.75), every rank listed', () => {
  const ix = new KvIndex(16);
  ix.stored(1n, 0, Tier.Device, null, blocks([10, 11], [1, 2]));
  ix.stored(1n, 0, Tier.Host, 11n, blocks([12], [3]));
  const rows = overlapScoreRows(byKey(ix.match([1n, 2n, 3n, 4n], 0, { ...W, overlapScoreCredit: 0.5 })), [rank(1n, 0), rank(2n, 2), rank(2n, 3)]);
  assert.deepEqual(rows.map((r) => [r.worker_id, r.dp_rank]), [[1n, 0], [2n, 2], [2n, 3]]);
  assert.deepEqual([rows[0].device_blocks, rows[0].host_pinned_extension_blocks, rows[0].host_pinned_blocks, rows[0].disk_blocks], [2, 1, 3, 3]);
  assert.equal(rows[0].router_credit_blocks, 1.75);
  assert.equal(rows[1].router_credit_blocks, 0);
  assert.equal(rows[2].device_blocks, 0);
  ix.destroy();
});

test('mergePredicted: the device match is the larger one, lower tiers stay the primary\'s, credit recomputed', () => {
  const row = (w: bigint, device: number, hostExt = 0): RankOverlap => ({ workerId: w, dpRank: 0, key: `${w}:0`, device, hostExt, diskExt: 0,
    externalExt: 0, effectiveOverlapBlocks: device + 0.75 * hostExt, cachedTokens: 0, effectivePrefillTokens: 0, routerCreditBlocks: 0 });
  const m = byKey(mergePredicted([row(1n, 1, 2), row(2n, 5)], [row(1n, 3), row(2n, 4), row(3n, 2, 9)], W, 4, 40));
  assert.deepEqual([m.get('1:0')?.device, m.get('1:0')?.hostExt], [3, 2]);
  assert.equal(m.get('1:0')?.effectiveOverlapBlocks, 4.5);
  assert.equal(m.get('1:0')?.cachedTokens, 18);
  assert.equal(m.get('1:0')?.effectivePrefillTokens, 22);
  assert.equal(m.get('1:0')?.routerCreditBlocks, 4.5);
  assert.equal(m.get('2:0')?.device, 5, 'a smaller side match changes nothing');
  assert.deepEqual([m.get('3:0')?.device, m.get('3:0')?.hostExt, m.get('3:0')?.cachedTokens], [2, 0, 8], 'a side-only rank has no lower tiers');
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KvIndex } from '../../../src/core/index/kv-index.js';
import { Tier } from '../../../src/core/index/index-types.js';

const W = { overlapScoreCredit: 1, hostCacheHitWeight: 0.75, diskCacheHitWeight: 0.25 };
const blocks = (exts: number[], locals: number[]) => exts.map((e, i) => ({ ext: BigInt(e), local: BigInt(locals[i]) }));

test('cache credit: effective blocks, cached tokens and effective prefill tokens (Dynamo `lib/kv-router/src/scheduling/overlap.rs`)', () => {
  const ix = new KvIndex(16);
  ix.stored(7n, 0, Tier.Device, null, blocks([1, 2], [1, 2]));
  ix.stored(7n, 0, Tier.Host, 2n, blocks([3, 4, 5], [3, 4, 5]));
  ix.stored(7n, 0, Tier.Disk, 5n, blocks([6, 7, 8, 9], [6, 7, 8, 9]));
  ix.stored(7n, 0, Tier.External, 9n, blocks([20, 21, 22, 23, 24], [10, 11, 12, 13, 14]));
  const q = Array.from({ length: 14 }, (_, i) => BigInt(i + 1));
  const [r] = ix.match(q, 500, { overlapScoreCredit: 1, hostCacheHitWeight: 0.5, diskCacheHitWeight: 0.25 });
  assert.deepEqual([r.device, r.hostExt, r.diskExt, r.externalExt], [2, 3, 4, 5]);
  assert.equal(r.effectiveOverlapBlocks, 5.75);
  assert.equal(r.cachedTokens, 92);
  assert.equal(r.effectivePrefillTokens, 500 - 92);
  const [small] = ix.match(q, 50, { overlapScoreCredit: 1, hostCacheHitWeight: 0.5, diskCacheHitWeight: 0.25 });
  assert.equal(small.effectivePrefillTokens, 0);
  ix.destroy();
});

test('dump as RouterEvents merges a linear chain and reloads to identical matches', () => {
  const a = new KvIndex(4);
  a.stored(1n, 0, Tier.Device, null, blocks([100, 101, 102], [1, 2, 3]));
  a.stored(2n, 1, Tier.Device, null, blocks([200, 201], [1, 2]));
  a.stored(2n, 1, Tier.Device, 201n, blocks([202], [9]));
  a.stored(2n, 1, Tier.Device, 201n, blocks([203], [8]));
  a.stored(1n, 0, Tier.Host, 102n, blocks([103], [4]));
  const events = a.dumpEvents();
  const w1 = events.filter((e) => e.worker_id === 1n && e.storage_tier === 'device');
  assert.equal(w1.length, 1, 'a linear prefix dumps as one event');
  assert.ok(events.some((e) => e.storage_tier === 'host_pinned'));
  const b = new KvIndex(4);
  assert.equal(b.loadEvents(events), events.length);
  for (const q of [[1n, 2n, 3n, 4n], [1n, 2n, 9n], [1n, 2n, 8n], [1n], [5n]]) {
    assert.deepEqual(b.match(q, 64, W), a.match(q, 64, W));
  }
  assert.equal(b.treeSize(2n, 1), 4);
  a.destroy(); b.destroy();
});

test('skipped events are counted and change nothing', () => {
  const ix = new KvIndex(4);
  assert.equal(ix.stored(1n, 0, Tier.Device, 999n, blocks([1], [1])), -1);
  assert.equal(ix.stored(1n, 0, Tier.Device, null, blocks([1, 1], [1, 2])), -2);
  assert.equal(ix.removed(1n, 0, Tier.Device, [5n, 6n]), 0);
  assert.deepEqual(ix.counters, { storedBlocks: 0, removedBlocks: 0, parentNotFound: 1, invalidSequence: 1, unknownRemoved: 2, storeStopped: 0 });
  assert.equal(ix.treeSize(1n, 0), 0);
  assert.deepEqual(ix.match([1n], 4, W), []);
  ix.destroy();
});

/**
 * The apply step (decoded batch -> index) without sockets: tiers, LoRA and salt seeds, salt
 * inheritance and ambiguity, multimodal extra_keys, EAGLE, group filtering, block-size and
 * token checks, rank override. Expectations come from hashing the same tokens on the request
 * side (what a selection would match with).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KvIndex } from '../../../../src/core/index/kv-index.js';
import { Tier } from '../../../../src/core/index/index-types.js';
import { blockHashes, publicBlockSeed } from '../../../../src/core/index/hashing.js';
import { KvBatchDecoder } from '../../../../src/service/kv-events/decode.js';
import { BatchApplier } from '../../../../src/service/kv-events/apply.js';
import { newCounters } from '../../../../src/service/kv-events/stats.js';
import { batch, clearedEvent, pack, removedEvent, storedEvent, tokenRange } from '../../../support/kv-batches.js';

const W = 7n;
const decoder = new KvBatchDecoder();

function setup(blockSize = 16) {
  const index = new KvIndex(blockSize);
  const counters = newCounters();
  const applier = new BatchApplier({ index, blockSize, workerId: W }, counters);
  const apply = (payload: Uint8Array, rank = 0): void => applier.apply(decoder.decode(payload), rank);
  /** Device depth and host extension of a prompt for rank `rank` (0 when the rank has no row). */
  const overlap = (tokens: number[], opts: { seed?: bigint; rank?: number; eagle?: boolean; mm?: bigint[][] } = {}) => {
    const locals = blockHashes(tokens, blockSize, { seed: opts.seed, eagle: opts.eagle, mm: opts.mm });
    const row = index.match(locals, 0, { overlapScoreCredit: 1, hostCacheHitWeight: 0, diskCacheHitWeight: 0 })
      .find((r) => r.workerId === W && r.dpRank === (opts.rank ?? 0));
    return { device: row?.device ?? 0, host: row?.hostExt ?? 0 };
  };
  return { index, counters, applier, apply, overlap };
}

const A = tokenRange(1000, 48), A2 = tokenRange(1000, 32);

test('device and host stores land in their tiers; host copies extend beyond the device prefix', () => {
  const { apply, overlap, counters, index } = setup();
  apply(batch([storedEvent([1n], null, A.slice(0, 16)), storedEvent([1n, 2n, 3n], null, A, { medium: 'CPU' })]));
  assert.deepEqual(overlap(A), { device: 1, host: 2 });
  assert.equal(index.treeSize(W, 0, Tier.Host), 3);
  apply(batch([removedEvent([3n], 'CPU'), removedEvent([9n])]));
  assert.deepEqual(overlap(A), { device: 1, host: 1 });
  assert.equal(counters.blocksStored, 4);
  assert.equal(counters.blocksRemoved, 1);
  assert.equal(counters.unknownRemoved, 1);
  apply(batch([clearedEvent()]));
  assert.deepEqual(overlap(A), { device: 0, host: 0 }, 'a clear empties every tier');
  assert.equal(counters.batchesApplied, 3);
  assert.equal(counters.clears, 1);
});

test('lora_name and cache_salt enter the seed; continuations inherit the salt of their parent', () => {
  const { apply, overlap, counters } = setup();
  apply(batch([storedEvent([1n, 2n], null, A2, { lora_name: 'sql', extra_keys: [['sql'], ['sql']] })]));
  assert.equal(overlap(A2).device, 0);
  assert.equal(overlap(A2, { seed: publicBlockSeed('sql', null) }).device, 2);

  const tenant = publicBlockSeed(null, 'tenant-a');
  apply(batch([storedEvent([11n], null, A.slice(0, 16), { cache_salt: 'tenant-a' })]));
  apply(batch([storedEvent([12n, 13n], 11n, A.slice(16))])); // no salt: inherits tenant-a
  assert.equal(overlap(A, { seed: tenant }).device, 3);
  // the salt may also arrive as a dynamo-cache-salt: tag in extra_keys[0]
  apply(batch([storedEvent([21n], null, tokenRange(5000, 16), { extra_keys: [['dynamo-cache-salt:tenant-b']] })]));
  apply(batch([storedEvent([22n], 21n, tokenRange(5016, 16))]));
  assert.equal(overlap(tokenRange(5000, 32), { seed: publicBlockSeed(null, 'tenant-b') }).device, 2);
  assert.equal(counters.droppedEvents.ambiguousNamespace, 0);
});

test('a hash seen under two namespaces is ambiguous: its later children are dropped', () => {
  const { apply, overlap, counters } = setup();
  apply(batch([storedEvent([1n], null, A.slice(0, 16), { cache_salt: 'x' })]));
  apply(batch([storedEvent([1n], null, A.slice(0, 16), { cache_salt: 'y' })]));
  apply(batch([storedEvent([2n], 1n, A.slice(16, 32))]));
  assert.equal(counters.droppedEvents.ambiguousNamespace, 1);
  assert.equal(overlap(A, { seed: publicBlockSeed(null, 'x') }).device, 1);
  // a clear forgets the namespaces: the same continuation is then unsalted (unknown parent)
  apply(batch([clearedEvent(), storedEvent([1n], null, A.slice(0, 16)), storedEvent([2n], 1n, A.slice(16, 32))]));
  assert.equal(overlap(A).device, 2);
  assert.equal(counters.droppedEvents.ambiguousNamespace, 1);
});

test('multimodal extra_keys and EAGLE bigram tokens hash like the request side', () => {
  const { apply, overlap } = setup();
  const digest = 'ab'.repeat(32), mm = BigInt('0x' + 'ab'.repeat(8));
  apply(batch([storedEvent([1n, 2n], null, A2, { extra_keys: [[[digest, 0]], null] })]));
  assert.equal(overlap(A2).device, 0, 'block 0 carries an image: plain tokens do not match');
  assert.equal(overlap(A2, { mm: [[mm], []] }).device, 2);
  const { apply: applyE, overlap: overlapE } = setup();
  const flat = tokenRange(100, 33); // two 16-token EAGLE windows need 33 tokens
  const bigrams = flat.slice(0, 32).map((t, i) => [t, i === 31 ? flat[32] : flat[i + 1]]);
  applyE(batch([storedEvent([1n, 2n], null, bigrams)]));
  assert.equal(overlapE(flat, { eagle: true }).device, 2);
});

test('only main-attention groups are indexed; removes of a learned non-main group are filtered', () => {
  const { apply, overlap, counters } = setup();
  apply(batch([
    storedEvent([1n], null, A.slice(0, 16), { group_idx: 0, kv_cache_spec_kind: 'full_attention' }),
    storedEvent([5n], null, A.slice(0, 16), { group_idx: 1, kv_cache_spec_kind: 'sliding_window' }),
    storedEvent([6n], null, A.slice(0, 16), { group_idx: 2, kv_cache_spec_kind: 'brand_new_kind' }),
    storedEvent([7n], null, A.slice(0, 16), { group_idx: 3 }),
    storedEvent([2n], 1n, A.slice(16, 32), { group_idx: 0 }),
  ]));
  apply(batch([removedEvent([1n], 'GPU', 1)]));
  assert.equal(overlap(A).device, 2);
  assert.deepEqual([counters.droppedEvents.nonMainAttention, counters.droppedEvents.unknownKind, counters.droppedEvents.unlearnedGroup], [2, 1, 1]);
});

test('a block_size mismatch indexes nothing; missing tokens stop the event after the complete blocks', () => {
  const { apply, overlap, counters } = setup();
  apply(batch([storedEvent([1n, 2n], null, A2, { block_size: 32 })]));
  assert.equal(counters.droppedEvents.blockSizeMismatch, 1);
  apply(batch([storedEvent([1n, 2n, 3n], null, A.slice(0, 40))]));
  assert.equal(overlap(A).device, 2);
  assert.equal(counters.storesStopped, 1);
  assert.equal(counters.blocksStored, 2);
});

test("the batch's data_parallel_rank names the rank; malformed events are counted", () => {
  const { apply, overlap, counters, applier } = setup();
  apply(pack([0, [storedEvent([1n], null, A.slice(0, 16)), ['NoSuchEvent'], { type: 'BlockStored' }], 3]), 0);
  assert.equal(overlap(A, { rank: 3 }).device, 1);
  assert.equal(overlap(A, { rank: 0 }).device, 0);
  assert.deepEqual([...applier.ranks], [3]);
  assert.equal(counters.droppedEvents.malformed, 2);
  apply(batch([storedEvent([2n], 1n, A.slice(16, 32))]), 3); // no rank in the batch: the listener's
  assert.equal(overlap(A, { rank: 3 }).device, 2);
});

test('runs of per-block removes apply as one would one by one (tiers, unknown hashes and filtered groups break runs)', () => {
  const { apply, overlap, counters, index } = setup();
  const chain = [1n, 2n, 3n, 4n];
  apply(batch([storedEvent(chain, null, tokenRange(1000, 64)), storedEvent([1n, 2n], null, tokenRange(1000, 32), { medium: 'CPU' }),
    storedEvent([9n], null, tokenRange(1000, 16), { group_idx: 1, kv_cache_spec_kind: 'sliding_window' })]));
  apply(batch([removedEvent([4n]), removedEvent([77n]), removedEvent([3n]), removedEvent([2n], 'CPU'), removedEvent([2n], 'GPU', 1),
    removedEvent([2n])]));
  assert.deepEqual(overlap(tokenRange(1000, 64)), { device: 1, host: 0 });
  assert.equal(index.treeSize(W, 0, Tier.Host), 1);
  assert.deepEqual([counters.blocksRemoved, counters.unknownRemoved, counters.droppedEvents.nonMainAttention], [4, 1, 2]);
  assert.equal(counters.eventsApplied, 2 + 5, 'every event but the two filtered ones');
});

test('a batch applied in slices (stopping after any event) ends exactly as applied whole', () => {
  // stores, per-block removes (merged into runs), a salted chain, a clear and stores again
  const events = [
    storedEvent([1n, 2n, 3n], null, A), removedEvent([3n]), removedEvent([2n]),
    storedEvent([11n], null, A.slice(0, 16), { cache_salt: 'tenant-a' }), storedEvent([12n], 11n, A.slice(16, 32)),
    removedEvent([12n]), removedEvent([99n]), clearedEvent(), storedEvent([21n, 22n], null, A2), storedEvent([23n], 22n, A.slice(32, 48)),
  ];
  const whole = setup();
  whole.apply(batch(events));
  for (const every of [1, 2, 3]) {
    const sliced = setup();
    const b = decoder.decode(batch(events));
    let calls = 0, next = 0, asked = 0;
    do { next = sliced.applier.applyFrom(b, 0, next, () => ++asked % every === 0); calls++; } while (next >= 0);
    assert.ok(calls > 1, `applied in ${calls} slices`);
    assert.deepEqual(sliced.counters, whole.counters, `stopping every ${every} events`);
    assert.deepEqual(sliced.overlap(A), whole.overlap(A));
    assert.deepEqual(sliced.overlap(A2), whole.overlap(A2));
  }
  assert.equal(whole.counters.batchesApplied, 1);
});

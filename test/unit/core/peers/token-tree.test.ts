/**
 * SGLang's approximate token tree on blocks (src/core/select/peers/token-tree.ts), hand-worked
 * against lightseekorg/smg `crates/kv_index/src/token_tree.rs` at 73da68ca (line numbers below).
 * A prompt here is its list of block keys; key i stands for the prefix of i + 1 blocks.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TokenTree, blockKeys } from '../../../../src/core/select/peers/token-tree.js';

const k = (...keys: number[]): Float64Array => Float64Array.from(keys);

test('blockKeys: 53 bits of each (lo, hi) tracking hash, so a key is an exact number', () => {
  const words = Uint32Array.from([7, 0, 0xffffffff, 0xffffffff, 1, 0x00200000]);
  assert.deepEqual([...blockKeys(words)], [7, 2 ** 53 - 1, 1]);
  assert.equal(blockKeys(new Uint32Array(0)).length, 0);
});

test('match: whole nodes, then stops inside a node (match_prefix_with_counts, 620-745)', () => {
  const t = new TokenTree();
  t.insert(k(1, 2, 3), 'A');
  assert.deepEqual(t.match(k(1, 2, 3, 4)), { tenant: 'A', blocks: 3 });
  assert.deepEqual(t.match(k(1, 2, 9)), { tenant: 'A', blocks: 2 }, 'a partial node counts its equal blocks');
  assert.deepEqual(t.match(k(9)), { tenant: null, blocks: 0 });
  assert.deepEqual(t.match(k()), { tenant: 'A', blocks: 0 }, 'an empty prompt reads the root (its tenants are registered on insert, 390-398)');
});

test('insert splits a node at the first differing block; the common part keeps both tenants (insert_from, 430-610)', () => {
  const t = new TokenTree();
  t.insert(k(1, 2, 3, 4), 'A');
  t.insert(k(1, 2, 7), 'B');
  assert.deepEqual([...t.tenantsAt(k(1, 2))!.keys()], ['A', 'B']);
  assert.deepEqual([...t.tenantsAt(k(1, 2, 3, 4))!.keys()], ['A']);
  assert.deepEqual([...t.tenantsAt(k(1, 2, 7))!.keys()], ['B']);
  // B: the common 2 blocks it did not hold plus its new branch of 1 (589-593)
  assert.deepEqual([...t.sizes()], [['A', 4], ['B', 3]]);
  assert.equal(t.storedBlocks(), 5);
  assert.deepEqual(t.match(k(1, 2, 7)), { tenant: 'B', blocks: 3 });
  assert.deepEqual(t.match(k(1, 2, 3)), { tenant: 'A', blocks: 3 });
});

test('a full-match node is counted again on every insert, as the source does (tokens_added += advance, 604)', () => {
  const t = new TokenTree();
  t.insert(k(1, 2), 'A');
  t.insert(k(1, 2), 'A');
  t.matchAndInsert(k(1, 2), 'A');
  assert.equal(t.sizes().get('A'), 6, 'the count overstates the 2 blocks held');
  assert.equal(t.storedBlocks(), 2);
});

test('the tenant of a match is the node\'s cached tenant once a touch lands on a tick divisible by 16 (touch_tenant, 276-300)', () => {
  const t = new TokenTree();
  t.insert(k(1), 'A'); // tick 0: the node is created (Node::new), tick 1: A touched
  t.insert(k(1), 'B'); // tick 2
  assert.equal(t.match(k(1)).tenant, 'A', 'no cached tenant: the first tenant (get_any_tenant, 253-270)');
  for (let tick = 3; tick < 16; tick++) t.insert(k(1), 'B');
  assert.equal(t.match(k(1)).tenant, 'A');
  t.insert(k(1), 'B'); // tick 16
  assert.equal(t.match(k(1)).tenant, 'B');
  assert.equal(t.tenantsAt(k(1))!.get('B'), 16);
});

test('matchAndInsert touches the matched tenant, then inserts for the one chosen (match_and_insert_with, 1039-1210)', () => {
  const t = new TokenTree();
  t.insert(k(1, 2), 'A'); // ticks 0 (node), 1
  const m = t.matchAndInsert(k(1, 2, 3), 'B');
  assert.deepEqual(m, { tenant: 'A', blocks: 2 }, 'the match is resolved before the insert');
  assert.equal(t.tenantsAt(k(1, 2))!.get('A'), 2, 'the match touched A');
  assert.equal(t.tenantsAt(k(1, 2))!.get('B'), 3, 'then the insert touched B');
  assert.deepEqual([...t.sizes()], [['A', 2], ['B', 3]]);
  const before = t.storedBlocks();
  assert.deepEqual(t.matchAndInsert(k(1, 2, 3, 4), null), { tenant: 'B', blocks: 3 });
  assert.equal(t.storedBlocks(), before, 'no tenant: no insert');
});

test('eviction removes the tenant\'s least recently used leaves until the excess is gone (evict_tenant, 1269-1334)', () => {
  const t = new TokenTree();
  t.insert(k(1, 2), 'A');
  t.insert(k(5, 6), 'A');
  t.insert(k(9), 'A');
  t.evictTenant('A', 2); // 5 blocks, 3 too many: [1, 2] then [5, 6] go (4 blocks)
  assert.equal(t.sizes().get('A'), 1);
  assert.deepEqual(t.match(k(1, 2)), { tenant: null, blocks: 0 });
  assert.deepEqual(t.match(k(5, 6)), { tenant: null, blocks: 0 });
  assert.deepEqual(t.match(k(9)), { tenant: 'A', blocks: 1 });
  assert.equal(t.storedBlocks(), 1, 'emptied nodes are unlinked');
  t.evictBySize(5);
  assert.equal(t.sizes().get('A'), 1, 'under the limit: nothing (evict_tenant_by_size, 1482-1496)');
});

test('eviction: a parent reached by unlinking an emptied child becomes a leaf (cleanup_empty_ancestors_with_parent, 1414-1456)', () => {
  const t = new TokenTree();
  t.insert(k(1, 2, 3), 'A');
  t.insert(k(1, 2), 'B'); // splits: [1, 2] {A, B} over [3] {A}
  t.evictTenant('A', 0);
  assert.equal(t.sizes().get('A'), 0);
  assert.deepEqual([...t.tenantsAt(k(1, 2))!.keys()], ['B']);
  assert.deepEqual(t.match(k(1, 2, 3)), { tenant: 'B', blocks: 2 });
});

test('eviction: a leaf shared with another tenant stays linked, so its parent is not queued (source quirk, 1423-1430)', () => {
  const t = new TokenTree();
  t.insert(k(1, 5), 'A');
  t.insert(k(1, 2), 'A'); // [1] {A} over [5] {A} and [2] {A}
  t.insert(k(1, 2), 'B');
  assert.equal(t.sizes().get('A'), 3);
  t.evictTenant('A', 0);
  assert.equal(t.sizes().get('A'), 1, 'only the two leaves went');
  assert.ok(t.tenantsAt(k(1))!.has('A'), 'A still holds [1]');
  assert.deepEqual(t.match(k(1, 5)), { tenant: 'A', blocks: 1 });
});

test('removeTenant drops a tenant everywhere and unlinks what only it held', () => {
  const t = new TokenTree();
  t.insert(k(1, 2, 3), 'A');
  t.insert(k(1, 2, 4), 'B');
  t.removeTenant('A');
  assert.equal(t.sizes().has('A'), false);
  assert.equal(t.storedBlocks(), 3);
  assert.deepEqual(t.match(k(1, 2, 3)), { tenant: 'B', blocks: 2 });
});

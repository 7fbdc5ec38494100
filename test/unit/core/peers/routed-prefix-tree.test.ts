/**
 * The tree of routed prompts against Ray's `PrefixTree` (ray-project/ray,
 * python/ray/llm/_internal/serve/routing_policies/prefix_aware/prefix_tree.py, Ray 2.58.0), one
 * character a block: its docstring example (lines 56-84), `prefix_match` (376-445),
 * `remove_tenants` (447-485), `evict_tenant_by_lru` (487-544), the eviction loop (591-601).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RoutedPrefixTree, type Tenant } from '../../../../src/core/select/peers/routed-prefix-tree.js';
import { charBlocks } from './prefix-words.js';

function insert(tree: RoutedPrefixTree, text: string, t: Tenant, now: number): void {
  tree.insert(t, charBlocks(text), text.length, now);
}

function match(tree: RoutedPrefixTree, text: string, cands: Tenant[]): [number, string[]] {
  const m = tree.match(charBlocks(text), text.length, cands);
  return [m.blocks, m.owners.map((i) => cands[i].id)];
}

/** Ray's docstring example: "helloworld" by tenant_1 at 1, "hellothere" and "hellothomas" by tenant_2 at 2 and 3. */
function docExample(): { tree: RoutedPrefixTree; t1: Tenant; t2: Tenant } {
  const tree = new RoutedPrefixTree();
  const t1 = tree.addTenant('tenant_1'), t2 = tree.addTenant('tenant_2');
  insert(tree, 'helloworld', t1, 1);
  insert(tree, 'hellothere', t2, 2);
  insert(tree, 'hellothomas', t2, 3);
  return { tree, t1, t2 };
}

test('char counts as in Ray\'s docstring example: tenant_1 10, tenant_2 14 (shared "hello" counted for each)', () => {
  const { tree, t1, t2 } = docExample();
  assert.equal(t1.size, 10);
  assert.equal(t2.size, 14);
  assert.equal(tree.entries, 24);
  insert(tree, 'hello', t1, 4); // already owned: touched, not counted again
  assert.equal(t1.size, 10);
});

test('prefix_match: the deepest node some candidate owns, and the candidates owning it', () => {
  const { tree, t1, t2 } = docExample();
  assert.deepEqual(match(tree, 'hellothomas', [t1, t2]), [11, ['tenant_2']]);
  assert.deepEqual(match(tree, 'hello', [t1, t2]), [5, ['tenant_1', 'tenant_2']]);
  assert.deepEqual(match(tree, 'hello', [t2, t1]), [5, ['tenant_2', 'tenant_1']], 'in candidate order');
  assert.deepEqual(match(tree, 'hellow', [t2, t1]), [6, ['tenant_1']]);
  // the "w" node belongs to tenant_1 only: with tenant_2 alone the walk stops before it (lines 416-421)
  assert.deepEqual(match(tree, 'helloworld', [t2]), [5, ['tenant_2']]);
  assert.deepEqual(match(tree, 'helix', [t1, t2]), [3, ['tenant_1', 'tenant_2']], 'a partial match keeps the node\'s tenants');
  // nothing matched: the root, which every tenant owns (add_tenants inserts "" for each, 229-251)
  assert.deepEqual(match(tree, 'zebra', [t1, t2]), [0, ['tenant_1', 'tenant_2']]);
  assert.deepEqual(match(tree, '', [t1]), [0, ['tenant_1']]);
});

test('evict_tenant_by_lru: the oldest insert time goes whole, repeated until enough is removed', () => {
  const tree = new RoutedPrefixTree();
  const t = tree.addTenant('t');
  insert(tree, 'helloworld', t, 1);
  insert(tree, 'hellothere', t, 2); // "hello" touched at 2: the list is hello,there @2 then world @1
  assert.equal(t.size, 15);
  assert.equal(tree.evictLru(t, 1), 5, 'asked for 1, the whole @1 group ("world") goes');
  assert.deepEqual(match(tree, 'helloworld', [t]), [5, ['t']]);
  assert.equal(tree.evictLru(t, 1), 10, 'then "hello" and "there" together');
  assert.equal(t.size, 0);
  assert.equal(tree.entries, 0);
  assert.deepEqual(match(tree, 'hello', [t]), [0, ['t']]);
  assert.equal(tree.evictLru(t, 3), 0, 'nothing left: nothing removed');
});

test('evict_tenant_by_lru takes only the tenant\'s own entries; nodes others own stay', () => {
  const { tree, t1, t2 } = docExample();
  assert.equal(tree.evictLru(t1, 0), 0, 'a minimum of 0 removes nothing');
  assert.equal(tree.evictLru(t1, 100), 10, 'more than it has: all of it');
  assert.deepEqual(match(tree, 'helloworld', [t1, t2]), [5, ['tenant_2']]);
  assert.equal(tree.entries, 14);
});

test('the eviction loop\'s turn: tenants above the threshold lose at least the excess over the target', () => {
  // Ray's router test test_eviction_threshold_behavior: threshold 10, target 5
  const tree = new RoutedPrefixTree();
  const r1 = tree.addTenant('r1'), r2 = tree.addTenant('r2');
  insert(tree, 'verylongtext', r1, 1);
  insert(tree, 'anotherlongtext', r1, 2);
  insert(tree, 'short', r2, 3);
  assert.equal(r1.size, 27);
  assert.equal(tree.evictionPass(10, 5), 27, 'excess 22: the @1 group (12) is not enough, the @2 group (15) goes too');
  assert.deepEqual([r1.size, r2.size], [0, 5], 'r2 is under the threshold');
  insert(tree, 'abcdefgh', r2, 4); // r2: 13 > 10, excess 8 over 5: its oldest group (5) and then the next (8)
  assert.equal(tree.evictionPass(10, 5), 13);
  insert(tree, 'abcdefgh', r2, 5);
  insert(tree, 'xyz', r2, 6); // 11 > 10, excess 6: the @5 group (8) suffices
  assert.equal(tree.evictionPass(10, 5), 8);
  assert.equal(r2.size, 3);
});

test('remove_tenants drops the tenant and only what it alone owned', () => {
  const { tree, t1, t2 } = docExample();
  assert.equal(tree.removeTenant('tenant_2'), 14);
  assert.equal(tree.removeTenant('tenant_2'), 0);
  assert.equal(tree.tenant('tenant_2'), undefined);
  assert.equal(tree.tenantCount, 1);
  assert.deepEqual(match(tree, 'hellothere', [t1]), [5, ['tenant_1']]);
  assert.deepEqual(match(tree, 'helloworld', [t1]), [10, ['tenant_1']]);
  assert.equal(tree.entries, 10);
  assert.equal(t2.size, 0);
});

test('the hard bound evicts the largest tenant\'s oldest blocks, the way Ray evicts, down to 0.9 of it', () => {
  const tree = new RoutedPrefixTree(20);
  const a = tree.addTenant('a'), b = tree.addTenant('b');
  insert(tree, 'aaaaaaaaaa', a, 1);
  insert(tree, 'bbbbbb', b, 2);
  insert(tree, 'cccc', a, 3);
  assert.equal(tree.entries, 20, 'at the bound: nothing evicted');
  insert(tree, 'd', b, 4); // 21 > 20: down to 18 from a (14 blocks), whose @1 group (10) goes whole
  assert.equal(tree.entries, 11);
  assert.equal(tree.boundEvicted, 10);
  assert.deepEqual([a.size, b.size], [4, 7]);
  assert.deepEqual(match(tree, 'cccc', [a, b]), [4, ['a']]);
});

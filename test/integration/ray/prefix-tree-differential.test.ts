/**
 * The `ray_prefix_affinity` tree against Ray's own: prefix_tree_ops.py runs seeded random inserts
 * (some at equal times), matches over random subsets of tenants, LRU evictions, tenant removals
 * and additions on Ray 2.58.0's `PrefixTree` (ray.llm._internal.serve.routing_policies.
 * prefix_aware.prefix_tree, imported from the Ray venv; no Ray cluster is started), and every
 * answer is replayed on RoutedPrefixTree with one character a block: the matched length, the
 * matching tenants in order, the characters evicted or removed, every tenant's count.
 * Skipped, with the reason, when the venv is not there.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RoutedPrefixTree } from '../../../src/core/select/peers/routed-prefix-tree.js';
import { charBlocks } from '../../unit/core/peers/prefix-words.js';

// compiled to build/dist/test/integration/ray/: five levels up is the project root
const root = join(dirname(fileURLToPath(import.meta.url)), '../../../../..');
const PYTHON = join(root, '.cache/ray-venv/bin/python');
const SEEDS = 200, STEPS = 60;

type Op = ['insert', string, string, number] | ['match', string, string[], number, string[]] | ['evict', string, number, number]
  | ['remove', string, number] | ['add', string] | ['counts', Record<string, number>];

test('RoutedPrefixTree answers as Ray 2.58.0\'s PrefixTree on random operations', { timeout: 120_000 }, (t) => {
  if (!existsSync(PYTHON)) { t.skip('no Ray venv at .cache/ray-venv: run bash scripts/ray-venv.sh (Ray 2.58.0, with pip as this machine configures it; other indexes: docs/development.md, "The Ray tests on another machine")'); return; }
  const r = spawnSync(PYTHON, [join(root, 'test/integration/ray/prefix_tree_ops.py'), String(SEEDS), String(STEPS)],
    { encoding: 'utf8', timeout: 100_000, maxBuffer: 64 << 20 });
  assert.equal(r.status, 0, r.error?.message ?? r.stderr);
  const runs = JSON.parse(r.stdout) as Op[][];
  assert.equal(runs.length, SEEDS);
  let checks = 0;
  for (const [seed, ops] of runs.entries()) {
    const tree = new RoutedPrefixTree();
    for (let i = 0; i < 4; i++) tree.addTenant(`t${i}`);
    const tenant = (id: string) => { const x = tree.tenant(id); assert.ok(x, `seed ${seed}: tenant ${id}`); return x; };
    for (const op of ops) {
      const where = `seed ${seed}: ${JSON.stringify(op)}`;
      switch (op[0]) {
        case 'insert': tree.insert(tenant(op[2]), charBlocks(op[1]), op[1].length, op[3]); break;
        case 'add': tree.addTenant(op[1]); break;
        case 'match': {
          const cands = op[2].map(tenant);
          const m = tree.match(charBlocks(op[1]), op[1].length, cands);
          assert.deepEqual([m.blocks, m.owners.map((i) => cands[i].id)], [op[3], op[4]], where);
          break;
        }
        case 'evict': assert.equal(tree.evictLru(tenant(op[1]), op[2]), op[3], where); break;
        case 'remove': assert.equal(tree.removeTenant(op[1]), op[2], where); break;
        case 'counts':
          assert.equal(tree.tenantCount, Object.keys(op[1]).length, where);
          for (const [id, n] of Object.entries(op[1])) assert.equal(tenant(id).size, n, where);
          break;
      }
      checks++;
    }
  }
  assert.ok(checks > SEEDS * STEPS, `${checks} operations replayed`);
});

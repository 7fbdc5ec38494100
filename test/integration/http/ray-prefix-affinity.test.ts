/**
 * `--routing-policy ray_prefix_affinity` (Ray Serve LLM's PrefixCacheAffinityRouter on the core)
 * over a real server: a routed prompt sticks to its rank, a new one goes to the smallest tree, a
 * query-only /select remembers nothing, and with `imbalanced_threshold` set an imbalanced fleet
 * falls back to power of two on queue length.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, type Server } from './server.js';
import type { RayPrefixAffinityPolicy } from '../../../src/core/select/peers/ray-prefix-affinity.js';

const tokens = (from: number, n: number): number[] => Array.from({ length: n }, (_, i) => from + i);
/** A shared 32-token system prompt (8 blocks of 4) and a question. */
const prompt = (question: number): number[] => [...tokens(1, 32), ...tokens(10_000 + 8 * question, 8)];

async function reserve(s: Server, id: string, tokenIds: number[]): Promise<bigint> {
  const r = await s.call('POST', '/select_and_reserve', { selection_id: id, model_name: 'model', token_ids: tokenIds });
  assert.equal(r.status, 200, r.text);
  return BigInt(r.body.worker_id);
}

async function fleet(t: Parameters<typeof startServer>[0], policy: string): Promise<Server> {
  const s = await startServer(t, { SELECT_SERVICE_ROUTING_POLICY: policy });
  for (const id of [1, 2, 3]) await s.worker(id);
  return s;
}

const tree = (s: Server) => (s.service.partition('model', 'default')!.policy as RayPrefixAffinityPolicy).tree;

test('ray_prefix_affinity: a routed prompt sticks to its rank; a new one goes to the smallest tree; /select remembers nothing', async (t) => {
  const s = await fleet(t, 'ray_prefix_affinity');
  const home = await reserve(s, 'a', prompt(0));
  assert.equal((await s.call('DELETE', '/reservations/a')).status, 200);
  for (let q = 1; q <= 4; q++) assert.equal(await reserve(s, `q${q}`, prompt(q)), home, `question ${q}: 32 of 40 tokens matched`);
  const other = await reserve(s, 'new', tokens(5000, 40));
  assert.notEqual(other, home, 'nothing matched: an empty tree');
  const entries = tree(s).entries;
  const query = await s.call('POST', '/select', { model_name: 'model', token_ids: tokens(9000, 40) });
  assert.equal(query.status, 200);
  assert.equal(tree(s).entries, entries, 'a query-only /select is not a routed request');
  // a worker that leaves takes its tree with it
  assert.equal((await s.call('DELETE', `/workers/${home}`)).status, 200);
  assert.equal(tree(s).tenant(`${home}:0`), undefined);
});

test('ray_prefix_affinity: queue imbalance beyond imbalanced_threshold falls back to power of two; off by default', async (t) => {
  const capped = await fleet(t, 'ray_prefix_affinity:imbalanced_threshold=1');
  const home = await reserve(capped, 'a', prompt(0));
  assert.equal(await reserve(capped, 'b', prompt(1)), home, 'queues 1, 0, 0: 1 - 0 is not > 1');
  // queues 2, 0, 0: imbalanced; power of two never picks the longest queue of three
  for (let i = 0; i < 5; i++) {
    const w = await reserve(capped, `c${i}`, prompt(2));
    assert.notEqual(w, home);
    assert.equal((await capped.call('DELETE', `/reservations/c${i}`)).status, 200);
  }
  const open = await fleet(t, 'ray_prefix_affinity');
  const h = await reserve(open, 'a', prompt(0));
  for (let i = 0; i < 5; i++) assert.equal(await reserve(open, `c${i}`, prompt(i + 1)), h, `queue ${i + 1} and 0: still the prefix`);
});

/**
 * `--routing-policy sglang_cache_aware` over a real server: select_and_reserve follows SGLang's
 * cache_aware rule (a repeated prompt sticks to the worker its first request was routed to; an
 * imbalanced fleet falls back to the least loaded worker).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, type Server } from './server.js';

/** 16 tokens (4 blocks of the fixture's 4) starting at `from`. */
const tokens = (from: number): number[] => Array.from({ length: 16 }, (_, i) => from + i);

async function reserve(s: Server, id: string, tokenIds: number[]): Promise<bigint> {
  const r = await s.call('POST', '/select_and_reserve', { selection_id: id, model_name: 'model', token_ids: tokenIds });
  assert.equal(r.status, 200, r.text);
  return BigInt(r.body.worker_id);
}

test('sglang_cache_aware: a repeated prompt sticks to its worker; a new one goes to the worker routed to least', async (t) => {
  const s = await startServer(t, { SELECT_SERVICE_ROUTING_POLICY: 'sglang_cache_aware' });
  await s.worker(1);
  await s.worker(2);
  const first = await reserve(s, 'a', tokens(1));
  assert.equal((await s.call('DELETE', '/reservations/a')).status, 200);
  // both idle again: a miss would go to the worker with fewer requests routed so far (the other one)
  assert.equal(await reserve(s, 'b', tokens(1)), first, 'the whole prompt matches: cache hit');
  assert.equal((await s.call('DELETE', '/reservations/b')).status, 200);
  assert.notEqual(await reserve(s, 'c', tokens(500)), first, 'no match: the worker routed to least');
});

test('sglang_cache_aware: an imbalanced fleet routes to the least loaded worker despite the cached prefix', async (t) => {
  const s = await startServer(t, { SELECT_SERVICE_ROUTING_POLICY: 'sglang_cache_aware:balance_abs_threshold=1' });
  await s.worker(1);
  await s.worker(2);
  const home = await reserve(s, 'a', tokens(1));
  assert.equal(await reserve(s, 'b', tokens(1)), home, 'loads 1 and 0: 1 - 0 is not above 1, so the match wins');
  assert.notEqual(await reserve(s, 'c', tokens(1)), home, 'loads 2 and 0: imbalanced, the least loaded worker');
  for (const id of ['a', 'b']) assert.equal((await s.call('DELETE', `/reservations/${id}`)).status, 200);
  assert.equal(await reserve(s, 'd', tokens(1)), home, 'loads 0 and 1, balanced: the match, the prompt\'s first worker');
});

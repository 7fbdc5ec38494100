/**
 * The `llmd` routing policy (select/peers/llmd.ts) over a real server: the approximate index
 * (no KV events) learns each booked prompt, blocks of 4 tokens. Scores are llm-d's guide profile:
 * 2 x prefix (matched / prompt blocks) + 1 x (1 - KV usage) + 1 x queue ((max - q) / (max - min)
 * of the requests whose prefill_complete is not reported yet).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, toks, type Server } from './server.js';

const X = toks(16); // 4 blocks
/** The first `n` tokens of X, then 16 - n others (base makes them distinct). */
const sharing = (n: number, base: number): number[] => [...X.slice(0, n), ...toks(16 - n, base)];

async function reserve(s: Server, id: string, tokens: number[]): Promise<number> {
  const r = await s.call('POST', '/select_and_reserve', { model_name: 'model', selection_id: id, token_ids: tokens });
  assert.equal(r.status, 200, r.text);
  return r.body.worker_id;
}
async function select(s: Server, tokens: number[]): Promise<number> {
  const r = await s.call('POST', '/select', { model_name: 'model', token_ids: tokens });
  assert.equal(r.status, 200, r.text);
  return r.body.worker_id;
}

test('llmd: a repeated prompt sticks; a busy rank\'s short prefix loses to an idle rank; prefill_complete empties the queue', async (t) => {
  const s = await startServer(t, { SELECT_SERVICE_ROUTING_POLICY: 'llmd' });
  await s.worker(1);
  await s.worker(2);
  const a = await reserve(s, 'r1', X); // a tie (nothing cached, both idle): either
  const b = a === 1 ? 2 : 1;
  // X again: A = 2 x 1 + 1 + 0 (one waiting) = 3 against B = 0 + 1 + 1 = 2
  assert.equal(await reserve(s, 'r2', X), a, 'the repeated prompt sticks');
  // one block of four shared: A = 2 x 0.25 + 1 + 0 (two waiting) = 1.5 against B = 2
  assert.equal(await reserve(s, 'r3', sharing(4, 100)), b, 'a short prefix on the busy rank loses');
  // two blocks shared with X (one with r3's prompt on B): A = 2 x 0.5 + 1 + 0 = 2 (two waiting on A,
  // one on B) against B = 2 x 0.25 + 1 + 1 = 2.5
  const z = sharing(8, 200);
  assert.equal(await select(s, z), b);
  for (const id of ['r1', 'r2']) assert.equal((await s.call('POST', `/reservations/${id}/prefill_complete`)).status, 200);
  // r1 and r2 past their prefill: A = 1 + 1 + 1 = 3 against B = 0.5 + 1 + 0 = 1.5
  assert.equal(await select(s, z), a, 'requests past prefill_complete no longer queue');
});

test('llmd: KV-cache utilisation from booked blocks over total_kv_blocks, and weights as llmd:key=value', async (t) => {
  const s = await startServer(t, { SELECT_SERVICE_ROUTING_POLICY: 'llmd' });
  await s.worker(1, { total_kv_blocks: 10 });
  await s.worker(2, { total_kv_blocks: 10 });
  const a = await reserve(s, 'r1', X);
  const b = a === 1 ? 2 : 1;
  await s.call('POST', '/reservations/r1/prefill_complete');
  // an unrelated prompt of 4 blocks: A would hold 8 of 10 (1 - 0.8), B 4 of 10 (1 - 0.4); queues equal
  assert.equal(await select(s, toks(16, 500)), b, 'the rank with free KV wins');
  assert.equal(await select(s, X), a, 'the cached prompt still wins: 2 + 0.6 + 1 against 0 + 0.6 + 1');

  const w = await startServer(t, { SELECT_SERVICE_ROUTING_POLICY: 'llmd:prefix_weight=1:kv_weight=0:queue_weight=4' });
  await w.worker(1);
  await w.worker(2);
  const first = await reserve(w, 'r1', X);
  // the prefix (1) no longer outweighs one waiting request (4)
  assert.notEqual(await select(w, X), first);
  await assert.rejects(startServer(t, { SELECT_SERVICE_ROUTING_POLICY: 'llmd:cpu_weight=2' }),
    /SELECT_SERVICE_ROUTING_POLICY: llmd: parameter "cpu_weight" must be a finite number in \[0, 1\] \(got 2\)/);
});

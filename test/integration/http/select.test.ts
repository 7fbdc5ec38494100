/**
 * `/select` and `/select_and_reserve` over a real server (Dynamo `lib/kv-router/src/services/selection/core/run.rs`), after Dynamo's HTTP
 * scenarios (Dynamo `lib/kv-router/src/services/selection/tests.rs`): echoed ids, no legacy fields, zero-overlap dp rows, booking and 409,
 * i64/u64 hashes at the edges, the policy-class header, and a client that disconnects while
 * queued (its claim must be freed).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, toks } from './server.js';
import { blockHashes, sequenceHashes } from '../../../src/core/index/hashing.js';
import { eventually } from '../../support/ports.js';

const LEGACY = ['cached_tokens', 'effective_overlap_blocks', 'tenant_id'];

test('select echoes selection_id, reports zero overlap per rank and books nothing', async (t) => {
  const s = await startServer(t);
  await s.worker(1);
  const r = await s.call('POST', '/select', { model_name: 'model', selection_id: 'select-1', token_ids: toks(4) });
  assert.equal(r.status, 200);
  assert.equal(r.body.selection_id, 'select-1');
  assert.equal(r.body.routing_group, 'default');
  assert.equal(r.body.worker_id, 1);
  assert.equal(r.body.dp_rank, 0);
  assert.equal(r.body.endpoint, 'http://worker-1:8000');
  assert.equal(r.body.block_size, 4);
  assert.equal(r.body.effective_prefill_tokens, 4);
  assert.equal(r.body.overlap.longest_matched, 0);
  assert.equal(r.body.overlap.dp['0'], 0);
  for (const k of [...LEGACY, 'sequence_hashes', 'isl_tokens', 'track_prefill_tokens', 'worker_load']) assert.equal(k in r.body, false, k);
  const loads = await s.call('GET', '/loads');
  assert.equal(loads.body[0].loads[0].active_requests, 0);
  const anon = await s.call('POST', '/select', { model_name: 'model', token_ids: toks(4) });
  assert.equal('selection_id' in anon.body, false, 'selection_id is omitted when absent');
});

test('select_and_reserve books, returns the chained sequence hashes, and a duplicate id is a 409 until DELETE', async (t) => {
  const s = await startServer(t);
  await s.worker(1);
  const r = await s.call('POST', '/select_and_reserve', { model_name: 'model', selection_id: 'res-1', token_ids: toks(4) });
  assert.equal(r.status, 200);
  assert.equal(r.body.selection_id, 'res-1');
  assert.equal(r.body.effective_prefill_tokens, 4);
  assert.equal(r.body.isl_tokens, 4);
  assert.equal(r.body.track_prefill_tokens, true);
  const expected = sequenceHashes(blockHashes(toks(4), 4)).map((h) => BigInt.asIntN(64, h));
  assert.deepEqual(r.body.sequence_hashes.map(BigInt), expected);
  for (const k of LEGACY) assert.equal(k in r.body, false, k);
  assert.equal((await s.call('GET', '/loads')).body[0].loads[0].potential_prefill_tokens, 4);
  const dup = await s.call('POST', '/select_and_reserve', { model_name: 'model', selection_id: 'res-1', token_ids: toks(4, 50) });
  assert.equal(dup.status, 409);
  assert.deepEqual(dup.body, { error: 'selection res-1 is already reserved or being reserved' });
  assert.equal((await s.call('DELETE', '/reservations/res-1')).status, 200);
  assert.equal((await s.call('GET', '/loads')).body[0].loads[0].active_requests, 0);
  assert.equal((await s.call('POST', '/select_and_reserve', { model_name: 'model', selection_id: 'res-1', token_ids: toks(4) })).status, 200);
  const gen = await s.call('POST', '/select_and_reserve', { model_name: 'model', token_ids: toks(4, 9) });
  assert.match(gen.body.selection_id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, 'a UUIDv4 when absent');
});

test('hash-form inputs keep every digit: i64 and u64 in, i64 out (0, 2^53+1, 2^63, 2^64-1, -1)', async (t) => {
  const s = await startServer(t);
  await s.worker(1);
  const edges = '0, 9007199254740993, 9223372036854775808, 18446744073709551615, -1';
  const body = `{"model_name":"model","selection_id":"edges","block_hashes":[${edges}],"sequence_hashes":[${edges}],"isl_tokens":20}`;
  const r = await s.call('POST', '/select_and_reserve', body);
  assert.equal(r.status, 200, r.text);
  assert.match(r.text, /"sequence_hashes":\[0,9007199254740993,-9223372036854775808,-1,-1\]/);
  // explicit booking with the echoed hashes (exactly what a client would send back)
  const b = await s.call('POST', '/reservations', `{"model_name":"model","selection_id":"edges-2","worker_id":1,"sequence_hashes":[${edges}],"isl_tokens":20}`);
  assert.equal(b.status, 201, b.text);
  const load = (await s.call('GET', '/loads')).body[0].loads[0];
  assert.equal(load.active_requests, 2);
  assert.equal(load.potential_decode_blocks, 4, 'active blocks are counted once per distinct sequence hash (-1 and 2^64-1 are one)');
  // the approximate index recorded the routing hashes: /dump writes them as u64
  const dump = await s.call('GET', '/dump');
  for (const h of ['9007199254740993', '9223372036854775808', '18446744073709551615']) assert.match(dump.text, new RegExp(`:${h}[,}\\]]`), h);
  const bad = await s.call('POST', '/select', '{"model_name":"model","block_hashes":[18446744073709551616],"sequence_hashes":[1],"isl_tokens":4}');
  assert.equal(bad.status, 422);
  assert.match(bad.body.error, /block_hashes/);
});

test('prompt validation is a 400 with the spec texts; an unknown partition is a 503', async (t) => {
  const s = await startServer(t);
  await s.worker(1);
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ sequence_hashes: [1], isl_tokens: 4 }, /block_hashes is required without token_ids/],
    [{ block_hashes: [1], isl_tokens: 4 }, /sequence_hashes is required without token_ids/],
    [{ block_hashes: [1], sequence_hashes: [1] }, /isl_tokens is required without token_ids/],
    [{ block_hashes: [1], sequence_hashes: [1], isl_tokens: 0 }, /isl_tokens must be greater than 0/],
    [{ block_hashes: [1, 2], sequence_hashes: [1], isl_tokens: 8 }, /block_hashes length 2 must match sequence_hashes length 1/],
  ];
  for (const [prompt, text] of cases) {
    const r = await s.call('POST', '/select', { model_name: 'model', ...prompt });
    assert.equal(r.status, 400, JSON.stringify(prompt));
    assert.match(r.body.error, text);
  }
  const other = await s.call('POST', '/select', { model_name: 'nobody', token_ids: toks(4) });
  assert.equal(other.status, 503);
  const bad = await s.call('POST', '/select', { model_name: 'model', token_ids: toks(4), router_config_override: { router_temperature: -1 } });
  assert.equal(bad.status, 422);
  assert.match(bad.body.error, /router_config_override/);
});

test('advisory select adds worker_load and never waits; unknown body fields are ignored', async (t) => {
  const s = await startServer(t, { DYN_ROUTER_QUEUE_THRESHOLD: '1.0' });
  await s.worker(1, { max_num_batched_tokens: 1024, total_kv_blocks: 1000 });
  const r = await s.call('POST', '/select', { model_name: 'model', token_ids: toks(8), advisory: true, bogus: { nested: [1] }, tenant_id: 'x' });
  assert.equal(r.status, 200);
  assert.deepEqual(r.body.worker_load, { active_prefill_tokens: 0, prefill_token_capacity: 1024, total_kv_blocks: 1000 });
});

test('x-dynamo-meta-policy-class picks the class: a zero queue limit is a 429 with details; blank headers are ignored', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'select-policy-'));
  const file = join(dir, 'policy.yaml');
  await writeFile(file, [
    'default_policy_family: standard',
    'uncached_isl_buckets: [{min_tokens: 0, bucket: all}]',
    'policy_classes:',
    '  - {name: std, policy_family: standard, cache_bucket: all, quantum: 1, prefill_busy_threshold_frac: 1.0, request_queue_limit_per_worker: 4}',
    '  - {name: latency, quantum: 1, prefill_busy_threshold: 0, request_queue_limit_per_worker: 0}',
  ].join('\n'));
  const s = await startServer(t, { DYN_ROUTER_POLICY_CONFIG: file });
  await s.worker(1, { max_num_batched_tokens: 4 });
  assert.equal((await s.call('POST', '/select_and_reserve', { model_name: 'model', selection_id: 'a', token_ids: toks(8) })).status, 200);
  const rej = await s.call('POST', '/select_and_reserve', { model_name: 'model', selection_id: 'l', token_ids: toks(4, 9) },
    { 'x-dynamo-meta-policy-class': '  latency ' });
  assert.equal(rej.status, 429);
  assert.deepEqual(rej.body.details, { policy_class: 'latency', limit_kind: 'requests', current: 0, limit: 0 });
  assert.match(rej.body.error, /router policy class "latency" queue requests limit reached/);
  const sel = await s.call('POST', '/select', { model_name: 'model', token_ids: toks(4, 9) }, { 'x-dynamo-meta-policy-class': 'latency' });
  assert.equal(sel.status, 429, 'the header applies to /select too');
  // a blank header means "no class": the request goes to the default family and books
  await s.call('POST', '/reservations/a/prefill_complete');
  const ok = await s.call('POST', '/select_and_reserve', { model_name: 'model', selection_id: 'l', token_ids: toks(4, 9) },
    { 'x-dynamo-meta-policy-class': '   ' });
  assert.equal(ok.status, 200, ok.text);
});

test('a client that disconnects while queued frees its claim: the id can be booked again', async (t) => {
  const s = await startServer(t, { DYN_ROUTER_QUEUE_THRESHOLD: '1.0' });
  await s.worker(1, { max_num_batched_tokens: 4 });
  assert.equal((await s.call('POST', '/select_and_reserve', { model_name: 'model', selection_id: 'a', token_ids: toks(8) })).status, 200);
  const ac = new AbortController();
  const queued = fetch(`${s.base}/select_and_reserve`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, signal: ac.signal,
    body: JSON.stringify({ model_name: 'model', selection_id: 'q', token_ids: toks(8, 9) }),
  }).catch((e: unknown) => e);
  const pending = async () => (await s.call('GET', '/loads')).body[0].pending_count as number;
  await eventually(async () => (await pending()) === 1, 5000, 'the request to queue');
  assert.equal((await s.call('POST', '/select_and_reserve', { model_name: 'model', selection_id: 'q', token_ids: toks(4) })).status, 409,
    'while queued, the id is claimed');
  ac.abort();
  assert.equal(((await queued) as Error).name, 'AbortError');
  await eventually(async () => (await pending()) === 0, 5000, 'the queued request to leave');
  await s.call('POST', '/reservations/a/prefill_complete');
  const again = await s.call('POST', '/select_and_reserve', { model_name: 'model', selection_id: 'q', token_ids: toks(4) });
  assert.equal(again.status, 200, again.text);
  assert.equal((await s.call('GET', '/loads')).body[0].loads[0].active_requests, 2, 'a and the new q; the aborted q booked nothing');
});

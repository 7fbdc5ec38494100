/**
 * Capture (Dynamo `lib/kv-router/src/services/common/replica_sync.rs`): a plain ZMQ SUB on a running service's replica PUB receives one message of
 * each kind — AddRequest, MarkPrefillCompleted, Free, and a session binding — and a generic
 * msgpack decoder (not our wire module) shows the exact field names and shapes Dynamo's
 * replicas read.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as zmq from 'zeromq';
import { Unpackr } from 'msgpackr';
import { SelectionServiceBuilder } from '../../../src/service/service.js';
import { parseRouterConfig } from '../../../src/core/config/config.js';
import { eventually, reservedPort } from '../../support/ports.js';

const generic = new Unpackr({ useRecords: false, mapsAsObjects: true, int64AsType: 'bigint' });

test('one message of each kind, decoded generically, has the exact v1 field names', async () => {
  const port = await reservedPort();
  const svc = await new SelectionServiceBuilder(parseRouterConfig({ DYN_ROUTER_USE_KV_EVENTS: 'false' }))
    .replicaSync(port).sessionAffinity({ ttlSecs: 60, mode: 'hard' }).build();
  const sub = new zmq.Subscriber({ linger: 0 });
  sub.connect(`tcp://127.0.0.1:${port}`);
  sub.subscribe();
  const got: [string, any][] = [];
  const pump = (async () => { for await (const [t, p] of sub) got.push([t.toString(), generic.unpack(p)]); })().catch(() => {});
  try {
    svc.upsertWorker({ worker_id: 7, model_name: 'm', routing_group: 'g', endpoint: 'http://w7', block_size: 4 });
    let i = 0;
    await eventually(async () => {
      const id = `probe-${i++}`;
      await svc.selectAndReserve({ model_name: 'm', routing_group: 'g', selection_id: id, token_ids: [1, 2, 3, 4] });
      svc.freeReservation(id);
      await new Promise((r) => setTimeout(r, 30));
      return got.length > 0;
    }, 5000, 'subscriber connected');
    got.length = 0;
    await svc.selectAndReserve({ model_name: 'm', routing_group: 'g', selection_id: 'cap', token_ids: [1, 2, 3, 4, 5, 6, 7, 8], session_id: 'sess-1', expected_output_tokens: 9 });
    svc.prefillComplete('cap');
    svc.freeReservation('cap');
    await eventually(() => got.filter(([t]) => t === 'dynamo.slot-tracker.v1').length >= 3 && got.some(([t]) => t === 'dynamo.session-affinity.v1'), 3000, 'messages');

    const life = got.filter(([t]) => t === 'dynamo.slot-tracker.v1').map(([, v]) => v);
    for (const v of life) {
      assert.deepEqual(Object.keys(v).sort(), ['block_size', 'event', 'model_name', 'routing_group']);
      assert.deepEqual(Object.keys(v.event).sort(), ['data', 'lora_name', 'request_id', 'router_id', 'worker']);
      assert.deepEqual([v.model_name, v.routing_group, v.block_size, v.event.request_id], ['m', 'g', 4, 'cap']);
      assert.deepEqual(v.event.worker, { worker_id: 7, dp_rank: 0 });
      assert.equal(typeof v.event.router_id, 'bigint');
      assert.notEqual(v.event.router_id, 0n);
      assert.equal(v.event.lora_name, null);
    }
    const add = life[0].event.data.AddRequest;
    assert.deepEqual(Object.keys(add).sort(), ['expected_output_tokens', 'prefill_load_hint', 'token_sequence', 'track_prefill_tokens']);
    assert.equal(add.token_sequence.length, 2);
    assert.equal(add.track_prefill_tokens, true);
    assert.equal(add.expected_output_tokens, 9);
    // the probes recorded block [1,2,3,4] in the approximate index: 4 of the 8 tokens are cached
    assert.deepEqual(add.prefill_load_hint, { initial_effective_prefill_tokens: 4, expected_prefill_duration: null });
    assert.deepEqual([life[1].event.data, life[2].event.data], ['MarkPrefillCompleted', 'Free']);

    const bind = got.find(([t]) => t === 'dynamo.session-affinity.v1')![1];
    assert.deepEqual(Object.keys(bind).sort(), ['dp_rank', 'model_name', 'routing_group', 'sequence', 'session_id', 'worker_id', 'writer_id']);
    assert.deepEqual([bind.model_name, bind.routing_group, bind.session_id, bind.worker_id, bind.dp_rank], ['m', 'g', 'sess-1', 7, 0]);
    assert.equal(bind.writer_id, life[0].event.router_id, 'the writer id is the replica id');
  } finally {
    sub.close();
    await pump;
    await svc.shutdown();
  }
});

test('issue 29: a subscriber of Dynamo\'s topics only (a Dynamo selector) never receives the anti-entropy messages', async () => {
  const port = await reservedPort();
  const svc = await new SelectionServiceBuilder(parseRouterConfig({ DYN_ROUTER_USE_KV_EVENTS: 'false' }))
    .replicaSync(port, [], { digestIntervalMs: 100 }).sessionAffinity({ ttlSecs: 60, mode: 'hard' }).build();
  const dynamo = new zmq.Subscriber({ linger: 0 });
  dynamo.connect(`tcp://127.0.0.1:${port}`);
  dynamo.subscribe('dynamo.slot-tracker.v1');
  dynamo.subscribe('dynamo.session-affinity.v1');
  const all = new zmq.Subscriber({ linger: 0 });
  all.connect(`tcp://127.0.0.1:${port}`);
  all.subscribe();
  const topics = { dynamo: new Set<string>(), all: new Set<string>() };
  const pumps = [[dynamo, topics.dynamo], [all, topics.all]].map(([s, set]) =>
    (async () => { for await (const [t] of s as zmq.Subscriber) (set as Set<string>).add(t.toString()); })().catch(() => {}));
  try {
    svc.upsertWorker({ worker_id: 7, model_name: 'm', endpoint: 'http://w7', block_size: 4 });
    let i = 0;
    await eventually(async () => {
      const id = `probe-${i++}`;
      await svc.selectAndReserve({ model_name: 'm', selection_id: id, token_ids: [1, 2, 3, 4] });
      svc.freeReservation(id);
      await new Promise((r) => setTimeout(r, 50));
      return topics.dynamo.size > 0 && topics.all.has('select-service.anti-entropy.v1');
    }, 10_000, 'both subscribers receiving; digests published');
    assert.throws(() => svc.freeReservation('unknown-here'), { status: 404 }); // published on the anti-entropy topic
    await new Promise((r) => setTimeout(r, 300)); // three more digests
    assert.deepEqual([...topics.dynamo], ['dynamo.slot-tracker.v1']);
  } finally {
    dynamo.close();
    all.close();
    await Promise.all(pumps);
    await svc.shutdown();
  }
});

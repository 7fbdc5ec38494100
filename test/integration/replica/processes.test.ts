/**
 * Replica sync and start-up recovery between real `select-service` processes (Dynamo `lib/kv-router/src/services/common/replica_sync.rs`, `lib/kv-router/src/services/indexer/server.rs`), over
 * HTTP on 127.0.0.1 and the ZMQ mesh: lifecycle propagation across two and three replicas,
 * lifecycle calls on a replica for an id booked on another, dynamic peer membership, the
 * registered-catalog rule, a replica killed and restarted, a mesh dropped for a while, and
 * recovery of the index from a peer's /dump.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startService, type ServiceProcess } from '../../support/service-process.js';
import { eventually, reservedPort, untilDisconnected } from '../../support/ports.js';
import { stringifyJson } from '../../../src/core/wire/json.js';

const W = (id: number) => ({ worker_id: id, model_name: 'model', endpoint: `http://worker-${id}:8000`, block_size: 4 });
const T = (base: number) => [base, base + 1, base + 2, base + 3];

/** `[active_requests, potential_decode_blocks, potential_prefill_tokens]` of a worker on a replica. */
async function load(s: ServiceProcess, worker = 1): Promise<number[] | null> {
  const r = await s.request('GET', '/loads?model_name=model');
  const l = (r.body as { loads: { worker_id: bigint | number; active_requests: number; potential_decode_blocks: number; potential_prefill_tokens: number }[] }[])[0]
    ?.loads.find((x) => Number(x.worker_id) === worker);
  return l ? [l.active_requests, l.potential_decode_blocks, l.potential_prefill_tokens] : null;
}

async function register(s: ServiceProcess, ...ids: number[]): Promise<void> {
  for (const id of ids) assert.equal((await s.request('POST', '/workers', W(id))).status, 201);
}

async function book(s: ServiceProcess, id: string, base: number, worker?: number): Promise<void> {
  const body: Record<string, unknown> = { model_name: 'model', selection_id: id, token_ids: T(base) };
  if (worker !== undefined) body.pinned_worker = { worker_id: worker, dp_rank: 0 };
  const r = await s.request('POST', '/select_and_reserve', body);
  assert.equal(r.status, 200, stringifyJson(r.body));
}

/** Books probes on `from` until `to` sees one (ZMQ slow joiner), then frees them everywhere. */
async function linked(from: ServiceProcess, to: ServiceProcess, tag: string): Promise<void> {
  let i = 0;
  await eventually(async () => {
    const id = `${tag}-probe-${i++}`;
    await book(from, id, 900 + i);
    await new Promise((r) => setTimeout(r, 50));
    const seen = (await load(to))?.[0] ?? 0;
    await from.request('DELETE', `/reservations/${id}`);
    return seen > 0;
  }, 10000, `replica link ${tag}`);
  await eventually(async () => (await load(to))?.[0] === 0 && (await load(from))?.[0] === 0, 5000, `${tag} probes freed`);
}

async function mesh(n: number): Promise<{ s: ServiceProcess[]; ports: number[] }> {
  const ports: number[] = [];
  for (let i = 0; i < n; i++) ports.push(await reservedPort());
  const s: ServiceProcess[] = [];
  for (let i = 0; i < n; i++) {
    const peers = ports.filter((_, j) => j !== i).map((p) => `tcp://127.0.0.1:${p}`).join(',');
    s.push(await startService(['--replica-sync-port', String(ports[i]), '--replica-sync-peers', peers]));
  }
  return { s, ports };
}

test('two replicas: admission, prefill_complete and DELETE propagate; output blocks stay local; B serves A\'s id', async () => {
  const { s: [a, b] } = await mesh(2);
  try {
    await register(a, 1);
    await register(b, 1);
    await linked(a, b, 'ab');
    await linked(b, a, 'ba');
    await book(a, 'r1', 1);
    await eventually(async () => JSON.stringify(await load(b)) === '[1,1,4]', 5000, 'admission on B');
    assert.equal((await a.request('POST', '/reservations/r1/prefill_complete', {})).status, 200);
    await eventually(async () => JSON.stringify(await load(b)) === '[1,1,0]', 5000, 'prefill on B');
    assert.equal((await a.request('POST', '/reservations/r1/output_block', {})).status, 200);
    await new Promise((r) => setTimeout(r, 200));
    assert.deepEqual(await load(a), [1, 2, 0]);
    assert.deepEqual(await load(b), [1, 1, 0], 'output blocks are never replicated');
    // lifecycle calls on B resolve the id booked on A; B's DELETE reaches A
    assert.equal((await b.request('POST', '/reservations/r1/output_block', {})).status, 200);
    assert.equal((await b.request('DELETE', '/reservations/r1')).status, 200);
    assert.equal((await b.request('DELETE', '/reservations/r1')).status, 404);
    await eventually(async () => JSON.stringify(await load(a)) === '[0,0,0]', 5000, 'free from B on A');
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
});

test('three replicas: a booking on one shows on the other two; unregistered workers\' events are dropped', async () => {
  const { s: [a, b, c] } = await mesh(3);
  try {
    await register(a, 1, 2);
    await register(b, 1, 2);
    await register(c, 1);
    await linked(a, b, 'ab');
    await linked(a, c, 'ac');
    await book(a, 'x', 1, 1);
    await eventually(async () => (await load(b))?.[0] === 1 && (await load(c))?.[0] === 1, 5000, 'admission on B and C');
    await book(a, 'y', 5, 2);
    await eventually(async () => (await load(b, 2))?.[0] === 1, 5000, 'worker 2 booking on B');
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(await load(c, 2), null, 'C never registered worker 2: the event is dropped, no worker is created');
    assert.equal((await c.request('DELETE', '/reservations/y')).status, 404);
  } finally {
    await Promise.all([a.stop(), b.stop(), c.stop()]);
  }
});

test('dynamic membership: register_peer starts delivery, deregister_peer stops it', async () => {
  const pa = await reservedPort(), pc = await reservedPort();
  const a = await startService(['--replica-sync-port', String(pa)]);
  const c = await startService(['--replica-sync-port', String(pc)]);
  try {
    await register(a, 1);
    await register(c, 1);
    const peer = { endpoint: `tcp://127.0.0.1:${pa}` };
    assert.equal((await c.request('POST', '/replica_sync/register_peer', peer)).status, 201);
    assert.equal((await c.request('POST', '/replica_sync/register_peer', peer)).status, 200);
    assert.deepEqual((await c.request('GET', '/replica_sync/peers')).body, [peer.endpoint]);
    await linked(a, c, 'ac');
    assert.equal((await c.request('POST', '/replica_sync/deregister_peer', peer)).status, 200);
    assert.equal((await c.request('POST', '/replica_sync/deregister_peer', peer)).status, 404);
    await untilDisconnected(pa); // C's subscriber was A's only peer
    await book(a, 'after', 1);
    await new Promise((r) => setTimeout(r, 500));
    assert.deepEqual(await load(c), [0, 0, 0], 'nothing arrives after deregistering');
  } finally {
    await Promise.all([a.stop(), c.stop()]);
  }
});

test('faults: a replica killed with SIGKILL and restarted rejoins; a dropped mesh converges on new traffic', async () => {
  const { s: [a, b0], ports } = await mesh(2);
  let b = b0;
  try {
    await register(a, 1);
    await register(b, 1);
    await linked(a, b, 'ab');
    await b.kill();
    await book(a, 'during', 1);
    assert.equal((await a.request('GET', '/health')).status, 200, 'the survivor keeps serving');
    assert.equal((await a.request('DELETE', '/reservations/during')).status, 200);
    b = await startService(['--replica-sync-port', String(ports[1]), '--replica-sync-peers', `tcp://127.0.0.1:${ports[0]}`]);
    await register(b, 1);
    await linked(a, b, 'rejoin');
    await linked(b, a, 'rejoin-back');

    // drop the mesh for a while: A's bookings made meanwhile are never seen by B
    const peerOfA = { endpoint: `tcp://127.0.0.1:${ports[0]}` };
    assert.equal((await b.request('POST', '/replica_sync/deregister_peer', peerOfA)).status, 200);
    await untilDisconnected(ports[0]); // B's subscriber was A's only peer
    await book(a, 'lost', 5);
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(await load(b), [0, 0, 0]);
    assert.equal((await b.request('POST', '/replica_sync/register_peer', peerOfA)).status, 201);
    assert.equal((await a.request('DELETE', '/reservations/lost')).status, 200);
    await linked(a, b, 'healed');
    await book(a, 'new', 9);
    await eventually(async () => JSON.stringify(await load(b)) === JSON.stringify(await load(a)), 5000, 'loads converge');
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
});

test('start-up recovery: a replica started with --indexer-peers matches like its peer; an unreachable peer starts it empty', async () => {
  const a = await startService([]);
  let c: ServiceProcess | null = null, d: ServiceProcess | null = null;
  try {
    await register(a, 1, 2);
    // approximate mode: bookings record their prefixes into A's index
    const prompt = Array.from({ length: 32 }, (_, i) => i + 1);
    const r = await a.request('POST', '/select_and_reserve', { model_name: 'model', selection_id: 'seed', token_ids: prompt, pinned_worker: { worker_id: 2, dp_rank: 0 } });
    assert.equal(r.status, 200);
    const dump = (await a.request('GET', '/dump')).body as Record<string, { events: unknown[] }>;
    assert.ok(dump['model:default'].events.length > 0);
    const unreachable = `http://127.0.0.1:${await reservedPort()}`; // reserved, never bound: nothing listens
    c = await startService(['--indexer-peers', `${unreachable},${a.url}`]);
    await register(c, 1, 2);
    const scores = async (s: ServiceProcess) => (await s.request('POST', '/overlap_scores', { model_name: 'model', token_ids: prompt })).body;
    assert.deepEqual(await scores(c), await scores(a), 'same overlap rows as the peer');
    const sel = (await c.request('POST', '/select', { model_name: 'model', token_ids: prompt })).body as { worker_id: bigint | number; overlap: { gpu: number } };
    assert.equal(Number(sel.worker_id), 2);
    assert.equal(sel.overlap.gpu, 32);

    d = await startService(['--indexer-peers', unreachable]);
    assert.match(d.output(), /no indexer peer answered|index recovery from peer failed/);
    assert.deepEqual((await d.request('GET', '/dump')).body, {});
    await register(d, 1);
    assert.equal((await d.request('GET', '/ready')).status, 200);
  } finally {
    await Promise.all([a.stop(), c?.stop(), d?.stop()]);
  }
});

test('issue 29: /ready is 503 with the reason while a peer is missing, then 200 after --replica-sync-ready-timeout-secs, with a warning and a gauge', async () => {
  const missing = `tcp://127.0.0.1:${await reservedPort()}`;
  const a = await startService(['--replica-sync-port', String(await reservedPort()), '--replica-sync-peers', missing, '--replica-sync-ready-timeout-secs', '3']);
  try {
    await register(a, 1);
    const r = await a.request('GET', '/ready');
    assert.equal(r.status, 503);
    assert.deepEqual(r.body.replica_sync, { meshed: false, waiting: [`${missing}: not connected`] });
    assert.equal(r.body.schedulable_workers, 1);
    await eventually(async () => (await a.request('GET', '/ready')).status === 200, 15_000, 'ready after the timeout');
    const metrics = await fetch(`${a.url}/metrics`).then((x) => x.text());
    assert.match(metrics, /^select_service_replica_mesh_timed_out 1$/m);
    assert.match(metrics, new RegExp(`^select_service_replica_peer_up\\{endpoint="${missing.replace(/\./g, '\\.')}"\\} 0$`, 'm'));
    // logged when /ready first saw the timeout; the child's stdout may reach us after its answer
    await eventually(async () => /replica mesh not formed after 3 s; ready anyway/.test(a.output()), 5_000, 'the warning in the log');
  } finally {
    await a.stop();
  }
});

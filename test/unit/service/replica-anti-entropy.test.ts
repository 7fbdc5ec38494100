/**
 * The anti-entropy protocol between real cores, in virtual time: each replica's lifecycle events
 * and anti-entropy messages go through an in-memory mesh that delivers them in order per sender
 * (what ZeroMQ guarantees) and can cut a replica off (every message to or from it vanishes). The
 * ZeroMQ transport itself is tested in test/integration/replica.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SelectionCore } from '../../../src/core/core.js';
import { parseRouterConfig } from '../../../src/core/config/config.js';
import { seededRng } from '../../../src/core/random.js';
import type { LifecycleEvent } from '../../../src/core/wire/events.js';
import { AntiEntropy } from '../../../src/service/replica-anti-entropy.js';
import { PeerViews } from '../../../src/service/replica-views.js';
import { Tombstones } from '../../../src/service/replica-tombstones.js';
import { ReplicaDrops } from '../../../src/service/replica-drops.js';
import { silentLogger } from '../../../src/service/logger.js';
import type { RepairBody, RepairMessage } from '../../../src/service/replica-repair-wire.js';
import { ManualClock } from '../core/core-helpers.js';

const cfg = parseRouterConfig({ DYN_ROUTER_USE_KV_EVENTS: 'false' });
type Item = { t: 'life'; e: LifecycleEvent; from: bigint } | { t: 'repair'; m: RepairMessage };

interface Node { id: bigint; core: SelectionCore; ae: AntiEntropy; views: PeerViews; seq: number; inbox: Item[]; cut: boolean }

/** Replicas over an in-memory mesh; `flush` delivers until nothing is in flight. */
class Mesh {
  readonly clock = new ManualClock();
  readonly nodes: Node[] = [];

  constructor(private readonly tombstoneSecs = 300) {}

  add(): Node {
    const id = BigInt(this.nodes.length + 1) * 0x1000n;
    const core = SelectionCore.newLocal(cfg, { clock: this.clock, rng: seededRng(this.nodes.length + 1), replicaId: id });
    for (let w = 1; w <= 2; w++) core.upsertWorker({ worker_id: w, model_name: 'm', endpoint: `http://w${w}`, block_size: 4 });
    const views = new PeerViews(id, this.clock, () => 3000, 30_000);
    const tombstones = new Tombstones(this.clock, { ttlSecs: this.tombstoneSecs, maxEntries: 1000, maxBytes: 1 << 20 });
    const node: Node = { id, core, views, seq: 0, inbox: [], cut: false, ae: null as unknown as AntiEntropy };
    node.ae = new AntiEntropy(core, views, tombstones, new ReplicaDrops(silentLogger, this.clock), (b) => this.repair(node, b), () => 1000);
    core.hooks.onLifecycle = (e) => { if (e.kind === 'free') node.ae.freedHere(e.requestId); this.broadcast(node, { t: 'life', e, from: id }); };
    core.hooks.onUnknownFree = (rid) => node.ae.unknownFreed(rid);
    this.nodes.push(node);
    return node;
  }

  private repair(from: Node, b: RepairBody): void {
    this.broadcast(from, { t: 'repair', m: { ...b, from: from.id, seq: from.seq++ } as RepairMessage });
  }

  private broadcast(from: Node, it: Item): void {
    if (from.cut) return;
    for (const n of this.nodes) if (n !== from && !n.cut) n.inbox.push(it);
  }

  /** Delivers everything in flight (and what that sends), each inbox in order. */
  flush(): void {
    for (let busy = true; busy;) {
      busy = false;
      for (const n of this.nodes) {
        const it = n.inbox.shift();
        if (!it) continue;
        busy = true;
        if (it.t === 'life') n.ae.applyLifecycle(it.e, it.from);
        else {
          const d = it.m.kind === 'digest' ? { lifecycle: it.m.sentLifecycle, affinity: 0 } : null;
          const { gap } = n.views.repairArrived(it.m.from, `node-${it.m.from}`, it.m.seq, d, false);
          n.ae.receive(it.m, gap);
        }
      }
    }
  }

  /** One anti-entropy round: a second passes, every replica publishes its digest, everything is delivered. */
  round(): void {
    this.clock.advance(1000);
    for (const n of this.nodes) if (!n.cut) n.ae.publishDigest({ lifecycle: 0, affinity: 0 });
    this.flush();
  }
}

const ids = (n: Node): string[] => [...n.core.reservations.bookedRows()].map(([id]) => id).sort();
const book = (n: Node, id: string, w = 1) =>
  n.core.selectAndReserve({ model_name: 'm', selection_id: id, token_ids: [1, 2, 3, 4], pinned_worker: { worker_id: w, dp_rank: 0 } });

test('agreeing replicas exchange digests only: nothing is listed, fetched or hashed again', async () => {
  const mesh = new Mesh();
  const [a, b] = [mesh.add(), mesh.add()];
  for (let i = 0; i < 100; i++) await book(i % 2 ? a : b, `r${i}`);
  mesh.flush();
  mesh.round();
  const hashed = a.ae.stats.rowsHashed;
  for (let r = 0; r < 3; r++) mesh.round();
  assert.deepEqual(ids(a), ids(b));
  assert.equal(a.ae.stats.digestMismatches + b.ae.stats.digestMismatches, 0);
  assert.equal(a.ae.stats.rowsHashed, hashed, 'no row hashed while nothing changes');
  assert.ok(a.ae.stats.digestMatches >= 3);
});

test('a partition: bookings and frees missed on either side are repaired in one round, owners decide', async () => {
  const mesh = new Mesh();
  const [a, b, c] = [mesh.add(), mesh.add(), mesh.add()];
  for (let i = 0; i < 30; i++) await book(mesh.nodes[i % 3], `old${i}`);
  mesh.flush();
  mesh.round();
  a.cut = true;
  // meanwhile: B and C free some of everyone's bookings, book new ones; A (cut off but serving) too
  for (const id of ['old0', 'old1', 'old2', 'old3']) b.core.freeReservation(id); // owned by A, B, C, A
  c.core.freeReservation('old4');
  await book(b, 'new-b');
  await book(c, 'new-c');
  await book(a, 'new-a');
  a.core.freeReservation('old5'); // owned by C: B and C never hear of it
  mesh.flush();
  assert.notDeepEqual(ids(a), ids(b));
  a.cut = false;
  mesh.round();
  mesh.round();
  const want = ids(a);
  assert.deepEqual(ids(b), want);
  assert.deepEqual(ids(c), want);
  assert.ok(!want.includes('old0') && !want.includes('old5') && want.includes('new-a') && want.includes('new-b'), want.join());
  // loads agree too
  for (const n of [b, c]) assert.deepEqual(n.core.loads(), a.core.loads());
});

test('a restarted replica learns every booking, its predecessor\'s included, and frees made elsewhere stay freed', async () => {
  const mesh = new Mesh();
  const [a, b] = [mesh.add(), mesh.add()];
  const c = mesh.add();
  for (let i = 0; i < 12; i++) await book(mesh.nodes[i % 3], `x${i}`);
  mesh.flush();
  mesh.round();
  c.cut = true; // killed
  mesh.nodes.splice(2, 1);
  a.core.freeReservation('x2'); // one of the dead replica's own
  mesh.flush();
  const d = mesh.add(); // the restart: a new process, a new router id, nothing held
  assert.deepEqual(ids(d), []);
  mesh.round();
  mesh.round();
  assert.deepEqual(ids(d), ids(a));
  assert.deepEqual(ids(a), ids(b));
  assert.ok(ids(d).includes('x5') && !ids(d).includes('x2'), 'the dead replica\'s bookings are kept, its freed one is not');
  const row = d.core.reservations.lookup('x5')!;
  assert.equal(row.owner, c.id, 'a repaired booking keeps its owner');
});

test('a free that reaches a replica first is published, and a free a peer missed is sent again', async () => {
  const mesh = new Mesh();
  const [a, b] = [mesh.add(), mesh.add()];
  await book(a, 'early');
  // B frees it before the admission reached B
  assert.throws(() => b.core.freeReservation('early'), { status: 404 });
  mesh.flush();
  assert.deepEqual([ids(a), ids(b)], [[], []], 'A frees it; the admission that arrives at B after its free is refused');
  // B misses A's free of a booking it holds: anti-entropy (A is the owner) drops it at B
  await book(a, 'late');
  mesh.flush();
  b.cut = true;
  a.core.freeReservation('late');
  mesh.flush();
  b.cut = false;
  assert.deepEqual(ids(b), ['late']);
  mesh.round();
  assert.deepEqual(ids(b), []);
  // A misses B's free of A's booking: B sends the free again when A's list shows it
  await book(a, 'missed-free');
  mesh.flush();
  a.cut = true;
  b.core.freeReservation('missed-free');
  mesh.flush();
  a.cut = false;
  mesh.round();
  mesh.round();
  assert.deepEqual([ids(a), ids(b)], [[], []]);
  assert.ok(b.ae.stats.freesResent > 0);
});

test('a difference no repair settles (a worker not registered here) is not asked about again until a worker is registered', async () => {
  const mesh = new Mesh();
  const [a, b] = [mesh.add(), mesh.add()];
  a.core.upsertWorker({ worker_id: 9, model_name: 'm', endpoint: 'http://w9', block_size: 4 });
  await book(a, 'on-9', 9);
  mesh.flush();
  mesh.round();
  mesh.round();
  const wants = b.seq;
  for (let r = 0; r < 3; r++) mesh.round();
  assert.equal(b.seq - wants, 3, 'B sends its digests and nothing else');
  assert.deepEqual(ids(b), []);
  // once the worker is registered on B, the difference is asked about again and repaired
  b.core.upsertWorker({ worker_id: 9, model_name: 'm', endpoint: 'http://w9', block_size: 4 });
  b.ae.workersChanged();
  mesh.round();
  assert.deepEqual(ids(b), ['on-9']);
});

test('the owner decides: a phantom is dropped from the owner\'s list even when no tombstone is left', async () => {
  const mesh = new Mesh(2);
  const [a, b, c] = [mesh.add(), mesh.add(), mesh.add()];
  await book(a, 'kept');
  await book(a, 'gone');
  await book(b, 'b-own');
  mesh.flush();
  c.cut = true;
  b.core.freeReservation('gone'); // A's booking, freed at B; C misses it
  mesh.flush();
  mesh.clock.advance(5000); // every tombstone of it has expired
  c.cut = false;
  mesh.round();
  mesh.round();
  assert.deepEqual(ids(c), ['b-own', 'kept']);
  assert.ok(c.ae.stats.dropped > 0, 'dropped on the owner\'s word');
});

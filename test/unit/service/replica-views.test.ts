/** What a replica knows of its peers (replica-views.ts): messages lost by the digest counters, gaps, and the mesh state /ready waits for. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PeerViews, type MeshState } from '../../../src/service/replica-views.js';
import { ManualClock } from '../core/core-helpers.js';

test('lost messages: the first digest is the baseline, then published minus arrived; a skipped sequence is a gap', () => {
  const v = new PeerViews(1n, new ManualClock(), () => 3000, 30_000);
  v.arrived(2n, 'lifecycle');
  assert.deepEqual(v.repairArrived(2n, 'ep', 0, { lifecycle: 40, affinity: 5 }, true), { gap: false, lost: 0 });
  for (let i = 0; i < 7; i++) v.arrived(2n, 'lifecycle');
  v.arrived(2n, 'affinity');
  assert.deepEqual(v.repairArrived(2n, 'ep', 1, { lifecycle: 50, affinity: 7 }, true), { gap: false, lost: 4 }, '3 lifecycle + 1 binding');
  assert.deepEqual(v.repairArrived(2n, 'ep', 2, { lifecycle: 50, affinity: 9 }, false), { gap: false, lost: 0 }, 'bindings not subscribed');
  assert.deepEqual(v.repairArrived(2n, 'ep', 5, null, false), { gap: true, lost: 0 });
});

test('mesh: each peer connected, heard, hearing us, first exchange done; then latched', () => {
  const clock = new ManualClock();
  const v = new PeerViews(1n, clock, () => 3000, 30_000);
  const latched: MeshState[] = [];
  const state = (connected: boolean) => v.mesh(['tcp://b:1'], () => connected, (s) => latched.push(s));
  assert.deepEqual(state(false).waiting, ['tcp://b:1: not connected']);
  assert.deepEqual(state(true).waiting, ['tcp://b:1: connected, no digest received yet']);
  v.repairArrived(2n, 'tcp://b:1', 0, { lifecycle: 0, affinity: 0 }, false);
  const peer = v.get(2n);
  peer.lastDigestAt = clock.now();
  assert.deepEqual(state(true).waiting, ['tcp://b:1: does not hear this replica yet']);
  peer.hears = new Set([1n]);
  assert.deepEqual(state(true).waiting, ['tcp://b:1: first digest exchange in progress']);
  peer.synced = true;
  assert.deepEqual(state(true), { meshed: true, timedOut: false, waiting: [] });
  assert.deepEqual(state(false), { meshed: true, timedOut: false, waiting: [] }, 'latched');
  assert.equal(latched.length, 1);
});

test('mesh: after the ready timeout it is meshed anyway, flagged timed out, with what was missing', () => {
  const clock = new ManualClock();
  const v = new PeerViews(1n, clock, () => 3000, 2000);
  const latched: MeshState[] = [];
  assert.equal(v.mesh(['tcp://b:1'], () => false, (s) => latched.push(s)).meshed, false);
  clock.advance(2000);
  assert.deepEqual(v.mesh(['tcp://b:1'], () => false, (s) => latched.push(s)), { meshed: true, timedOut: true, waiting: [] });
  assert.deepEqual(latched, [{ meshed: true, timedOut: true, waiting: ['tcp://b:1: not connected'] }]);
  assert.deepEqual(new PeerViews(1n, clock, () => 3000, 2000).mesh([], () => false, () => {}).meshed, true, 'no peers: meshed at once');
});

test('mesh: not before a worker is registered here (no timeout meanwhile); a registration before it formed starts the first exchange again', () => {
  const clock = new ManualClock();
  const v = new PeerViews(1n, clock, () => 3000, 2000);
  v.repairArrived(2n, 'tcp://b:1', 0, { lifecycle: 0, affinity: 0 }, false);
  const peer = v.get(2n);
  peer.lastDigestAt = clock.now();
  peer.hears = new Set([1n]);
  peer.synced = true;
  peer.repaired = 1;
  const state = (workers: boolean) => v.mesh(['tcp://b:1'], () => true, () => {}, workers);
  assert.deepEqual(state(false), { meshed: false, timedOut: false, waiting: ['no worker registered here yet'] });
  clock.advance(5000);
  assert.deepEqual(state(false).timedOut, false, 'the ready timeout does not run while no worker is registered');
  peer.lastDigestAt = clock.now();
  v.resync();
  assert.deepEqual([peer.synced, peer.repaired], [false, 0]);
  assert.deepEqual(state(true), { meshed: false, timedOut: false, waiting: ['tcp://b:1: first digest exchange in progress'] });
  clock.advance(1999);
  assert.equal(state(true).meshed, false, 'the timeout counts from the first state asked with a worker registered');
  peer.synced = true;
  assert.deepEqual(state(true), { meshed: true, timedOut: false, waiting: [] });
  v.resync();
  assert.equal(peer.synced, true, 'once formed, a registration changes nothing');
});

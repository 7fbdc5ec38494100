/**
 * Issue 29, with real faults: three `select-service` processes meshed, one of them in its own
 * network namespace. A driver books and frees at 200 operations a second over the replicas (as a
 * load balancer would) and keeps the truth. The namespaced replica is cut off for 10 s (its link
 * down: packets vanish) and healed; another is killed with SIGKILL and restarted. Within 10 s of
 * the heal and of the restart, with traffic going on, every replica's `active_requests` per
 * worker equals the truth: nothing is left to the 300 s expiry sweep.
 *
 * Needs root and iproute2 (skipped with the reason otherwise). About a minute.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CLI, startService, type ServiceProcess } from '../../support/service-process.js';
import { eventually, reservedPort } from '../../support/ports.js';
import { makeNetns, netnsUnavailable, type Netns } from '../../support/netns.js';
import { LoadDriver } from '../../support/load-driver.js';
import { seededRng } from '../../../src/core/random.js';
import { series } from '../../support/prom-text.js';

const WORKERS = [1, 2, 3, 4];
const CONVERGE_MS = 10_000;

async function loadsOf(s: ServiceProcess): Promise<Map<number, number>> {
  const r = await s.request('GET', '/loads?model_name=model');
  const m = new Map<number, number>();
  for (const l of (r.body as { loads: { worker_id: number | bigint; active_requests: number }[] }[])[0]?.loads ?? []) m.set(Number(l.worker_id), l.active_requests);
  return m;
}

const same = (a: Map<number, number>, b: Map<number, number>): boolean => WORKERS.every((w) => (a.get(w) ?? 0) === (b.get(w) ?? 0));

/**
 * Waits until every replica's loads equal the truth, traffic going on: each attempt pauses the
 * driver (its requests in flight end), polls for up to half a second, and resumes it for half a
 * second. Resolves with the time it took; throws with every replica's loads after `deadlineMs`.
 */
async function converged(driver: LoadDriver, replicas: ServiceProcess[], from: number, deadlineMs: number): Promise<number> {
  for (;;) {
    await driver.pause();
    const want = driver.expected(WORKERS);
    const until = performance.now() + 500;
    let got: Map<number, number>[] = [];
    while (performance.now() < until) {
      got = await Promise.all(replicas.map(loadsOf));
      if (got.every((g) => same(g, want))) { driver.resume(); return performance.now() - from; }
      await new Promise((r) => setTimeout(r, 50));
    }
    if (performance.now() - from > deadlineMs) {
      driver.resume();
      const show = (m: Map<number, number>) => JSON.stringify(WORKERS.map((w) => m.get(w) ?? 0));
      throw new Error(`loads did not converge within ${deadlineMs} ms: truth ${show(want)}, replicas ${got.map(show).join(' ')}`);
    }
    driver.resume();
    await new Promise((r) => setTimeout(r, 500));
  }
}

async function metric(s: ServiceProcess, name: string, labels: Record<string, string>): Promise<number> {
  const text = await fetch(`${s.url}/metrics`).then((r) => r.text());
  return series(text, name, labels).reduce((a, x) => a + x.value, 0);
}

const skip = netnsUnavailable();

test('a 10 s partition and a kill and restart under 200 ops/s: every replica equals the truth within 10 s', { skip: skip ?? false, timeout: 180_000 }, async (t) => {
  let ns: Netns | null = null;
  const procs: ServiceProcess[] = [];
  const driver = new LoadDriver({ model: 'model', opsPerSec: 200, min: 150, max: 400, random: (() => { const r = seededRng(29); return () => r.next(); })() });
  t.after(async () => {
    await driver.stop().catch(() => {});
    await Promise.all(procs.map((p) => p.kill().catch(() => {})));
    ns?.remove();
  });
  ns = makeNetns();
  const [p1, p2, p3] = [await reservedPort(), await reservedPort(), await reservedPort()];
  const host = ns.hostAddress, inner = ns.innerAddress;
  // r1 lives in the namespace: it reaches the others' PUBs at the host end, they reach its at the inner end
  const start = (i: number): Promise<ServiceProcess> => {
    if (i === 0) {
      return startService(['--replica-sync-port', String(p1), '--replica-sync-peers', `tcp://${host}:${p2},tcp://${host}:${p3}`],
        {}, 60_000, [...ns!.exec, process.execPath, CLI], inner);
    }
    const [mine, other] = i === 1 ? [p2, p3] : [p3, p2];
    return startService(['--replica-sync-port', String(mine), '--replica-sync-peers', `tcp://${inner}:${p1},tcp://127.0.0.1:${other}`]);
  };
  const register = async (s: ServiceProcess): Promise<void> => {
    for (const w of WORKERS) {
      const r = await s.request('POST', '/workers', { worker_id: w, model_name: 'model', endpoint: `http://worker-${w}:8000`, block_size: 4 });
      assert.equal(r.status, 201);
    }
  };
  const ready = (s: ServiceProcess) => eventually(async () => (await s.request('GET', '/ready')).status === 200, 40_000, `${s.url} ready`);
  for (let i = 0; i < 3; i++) { procs.push(await start(i)); await register(procs[i]); }
  await Promise.all(procs.map(ready));
  const [r1, r2] = procs;
  for (const p of procs) driver.include(p);
  driver.start();
  await new Promise((r) => setTimeout(r, 3000));

  // 1. r1 cut off for 10 s; the others keep booking and freeing, r1's bookings among them
  await driver.exclude(r1);
  ns.cut();
  await new Promise((r) => setTimeout(r, 10_000));
  ns.heal();
  const healed = performance.now();
  driver.include(r1);
  const afterHeal = await converged(driver, procs, healed, CONVERGE_MS);
  t.diagnostic(`converged ${Math.round(afterHeal)} ms after the heal`);
  assert.ok(await metric(r1, 'select_service_replica_dropped_messages_total', { direction: 'received', reason: 'lost' }) > 0,
    'the cut replica counts the messages it lost');
  assert.ok(await metric(r1, 'select_service_replica_repairs_total', {}) > 0, 'and anti-entropy repaired them');

  // 2. the third replica killed and restarted on the same ports
  const r3 = procs[2];
  await driver.exclude(r3);
  await r3.kill();
  await new Promise((r) => setTimeout(r, 2000));
  const restarted = performance.now();
  procs[2] = await start(2);
  await register(procs[2]);
  await ready(procs[2]);
  t.diagnostic(`restarted replica ready ${Math.round(performance.now() - restarted)} ms after its start`);
  driver.include(procs[2]);
  const afterRestart = await converged(driver, procs, restarted, CONVERGE_MS);
  t.diagnostic(`converged ${Math.round(afterRestart)} ms after the restart`);

  await new Promise((r) => setTimeout(r, 2000));
  await driver.stop();
  await converged(driver, procs, performance.now(), CONVERGE_MS);
  t.diagnostic(`driver: ${JSON.stringify(driver.counts)}`);
  assert.deepEqual(driver.failures, [], 'no request failed');
  assert.ok(driver.counts.booked > 1500, `bookings made: ${driver.counts.booked}`);
  void r2;
});

/**
 * Issue 15, defect 4: at most 1,022 KV-event ranks (one libzmq SUB each, under ZeroMQ's default
 * 1,023-socket context). Each rank now holds one connection of our own subscriber, so 10,000
 * ranks register, connect and stay live within this machine's 20,000-descriptor limit. Real
 * subscribers, one per rank; 20 loopback publishers in a child process.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { kvService, workerBody } from '../../support/kv-service.js';
import { eventually } from '../../support/ports.js';

const WORKERS = 1250, RANKS = 8, PUBLISHERS = 20;

test('defect 4: 10,000 KV-event ranks register, connect and stay live', { timeout: 180_000 }, async (t) => {
  const farm = spawn(process.execPath, [join(dirname(fileURLToPath(import.meta.url)), '../../support/publisher-farm.js'), String(PUBLISHERS)],
    { stdio: ['pipe', 'pipe', 'inherit'] });
  t.after(() => { farm.stdin.end(); farm.kill(); });
  const lines = createInterface({ input: farm.stdout })[Symbol.asyncIterator]();
  const next = async (): Promise<string> => { const r = await lines.next(); if (r.done) throw new Error('publisher farm exited'); return r.value; };
  const endpoints = JSON.parse(await next()) as string[];
  const ask = async (cmd: string): Promise<string> => { farm.stdin.write(`${cmd}\n`); return next(); };

  const service = await kvService();
  t.after(() => service.shutdown());
  for (let w = 0; w < WORKERS; w++) {
    const eps: Record<string, string> = {};
    for (let r = 0; r < RANKS; r++) eps[r] = endpoints[(w * RANKS + r) % PUBLISHERS];
    const rec = service.upsertWorker(workerBody(w + 1, { data_parallel_size: RANKS, kv_events_endpoints: eps }));
    assert.equal(rec.lifecycle, 'schedulable', `worker ${w + 1}: ${rec.not_schedulable_reasons?.join('; ')}`);
  }
  const total = WORKERS * RANKS;
  assert.equal(service.ready().schedulable_workers, WORKERS);
  await eventually(async () => (await ask('subs')) === `subs ${total}`, 120_000, `${total} subscriptions`);

  const ranks = () => (service.ingressStats() ?? []).flatMap((w) => w.ranks);
  assert.equal(ranks().length, total);
  assert.ok(ranks().every((r) => r.transport === 'connected'));
  // two rounds of batches reach every rank: each applies both
  for (const seq of [1n, 2n]) {
    assert.equal(await ask(`publish ${seq}`), `published ${seq}`);
    await eventually(() => ranks().every((r) => r.watermark === seq), 60_000, `every rank applied batch ${seq}`);
  }
  const stats = service.ingressStats() ?? [];
  assert.equal(stats.reduce((n, w) => n + w.counters.batchesApplied, 0), 2 * total);
  assert.ok(ranks().every((r) => r.transport === 'connected'), 'still connected');
});

/**
 * Many KV-event ranks on one service: `workers` workers of `ranks` ranks each, every rank
 * subscribed to one of `publishers` loopback publishers in a child process (publisher-farm.ts,
 * so the publishers' descriptors do not count against this process's), then two rounds of
 * batches that every rank must apply. Real subscribers, one connection per rank. Shared by the
 * suite (1,100 ranks, past libzmq's old 1,023-socket cap) and `npm run bench -- many-ranks`
 * (10,000), which reports the phase times and memory this returns.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { kvService, workerBody } from './kv-service.js';
import { eventually } from './ports.js';

export interface ManyRanksOptions {
  workers: number;
  ranks: number;
  publishers: number;
  /** Deadline of each wait (all subscribed; every rank applied a batch). */
  deadlineMs: number;
  /** Called before each memory reading (a benchmark passes a full GC, so garbage is not counted). */
  beforeMemory?: () => void;
}

export interface ManyRanksRun {
  ranks: number;
  /** From the first POST /workers to the last (every rank starts connecting as it registers). */
  registerMs: number;
  /** From the first registration until every rank is subscribed at its publisher. */
  connectMs: number;
  /** From the first batch sent until every rank applied it (`live`). */
  liveMs: number;
  /** The same for the second batch (connections warm). */
  secondMs: number;
  /** This process's memory before registering and once every rank is live (bytes; after `beforeMemory`). */
  memoryBefore: NodeJS.MemoryUsage;
  memoryLive: NodeJS.MemoryUsage;
  /** Open descriptors of this process before and once live (null off Linux). */
  fdsBefore: number | null;
  fdsLive: number | null;
}

type After = { after(fn: () => void | Promise<void>): void };

const openFds = (): number | null => { try { return readdirSync('/proc/self/fd').length; } catch { return null; } };

/** Registers the fleet, waits until every rank is connected and has applied two batches; asserts each step. */
export async function runManyRanks(t: After, o: ManyRanksOptions): Promise<ManyRanksRun> {
  const farm = spawn(process.execPath, [join(dirname(fileURLToPath(import.meta.url)), 'publisher-farm.js'), String(o.publishers)],
    { stdio: ['pipe', 'pipe', 'inherit'] });
  t.after(() => { farm.stdin.end(); farm.kill(); });
  const lines = createInterface({ input: farm.stdout })[Symbol.asyncIterator]();
  const next = async (): Promise<string> => { const r = await lines.next(); if (r.done) throw new Error('publisher farm exited'); return r.value; };
  const endpoints = JSON.parse(await next()) as string[];
  const ask = async (cmd: string): Promise<string> => { farm.stdin.write(`${cmd}\n`); return next(); };

  const service = await kvService();
  t.after(() => service.shutdown());
  const total = o.workers * o.ranks;
  o.beforeMemory?.();
  const memoryBefore = process.memoryUsage(), fdsBefore = openFds();
  const t0 = performance.now();
  for (let w = 0; w < o.workers; w++) {
    const eps: Record<string, string> = {};
    for (let r = 0; r < o.ranks; r++) eps[r] = endpoints[(w * o.ranks + r) % o.publishers];
    const rec = service.upsertWorker(workerBody(w + 1, { data_parallel_size: o.ranks, kv_events_endpoints: eps }));
    assert.equal(rec.lifecycle, 'schedulable', `worker ${w + 1}: ${rec.not_schedulable_reasons?.join('; ')}`);
  }
  const registerMs = performance.now() - t0;
  assert.equal(service.ready().schedulable_workers, o.workers);
  await eventually(async () => (await ask('subs')) === `subs ${total}`, o.deadlineMs, `${total} subscriptions`);
  const connectMs = performance.now() - t0;

  const ranks = () => (service.ingressStats() ?? []).flatMap((w) => w.ranks);
  assert.equal(ranks().length, total);
  assert.ok(ranks().every((r) => r.transport === 'connected'));
  // two rounds of batches reach every rank: each applies both
  const applied: number[] = [];
  for (const seq of [1n, 2n]) {
    const sent = performance.now();
    assert.equal(await ask(`publish ${seq}`), `published ${seq}`);
    await eventually(() => ranks().every((r) => r.watermark === seq), o.deadlineMs, `every rank applied batch ${seq}`);
    applied.push(performance.now() - sent);
  }
  o.beforeMemory?.();
  const memoryLive = process.memoryUsage(), fdsLive = openFds();
  const stats = service.ingressStats() ?? [];
  assert.equal(stats.reduce((n, w) => n + w.counters.batchesApplied, 0), 2 * total);
  assert.ok(ranks().every((r) => r.transport === 'connected'), 'still connected');
  return { ranks: total, registerMs, connectMs, liveMs: applied[0], secondMs: applied[1], memoryBefore, memoryLive, fdsBefore, fdsLive };
}

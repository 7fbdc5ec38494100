/**
 * A real Prometheus (Debian's `prometheus` server, never a downloaded one) scrapes a running
 * service every second while a real ZMQ publisher replays a captured vLLM fixture and a client
 * makes selections over HTTP; the values are then read back through Prometheus's own query API
 * (`/api/v1/query`): blocks stored, the feed up, the selection rate and the exact selection count.
 * Reports itself skipped when the binary is missing (.ci/run installs it).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { buildApp } from '../../../src/http/app.js';
import { FakeEngine } from '../../support/fake-engine.js';
import { fixtureLines } from '../../support/kv-batches.js';
import { counters, kvService, until, workerBody } from '../../support/kv-service.js';
import { eventually, reservedPort } from '../../support/ports.js';

const PROMETHEUS = '/usr/bin/prometheus';
const SKIP = existsSync(PROMETHEUS) ? false
  : `skipped: Prometheus is not installed at ${PROMETHEUS} (Debian: apt-get install -y prometheus; .ci/run installs it)`;
const FIXTURE = 'v026-array-batch.jsonl';

interface PromSample { metric: Record<string, string>; value: [number, string] }

test('Prometheus scrapes /metrics: KV blocks stored, the feed up, the selection rate', { skip: SKIP, timeout: 180_000 }, async (t) => {
  // the service, fed by a real publisher with the fixture's exact bytes
  const engine = await FakeEngine.start();
  const service = await kvService();
  const app = await buildApp(service);
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.after(async () => { await app.close(); await service.shutdown(); engine.close(); });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  service.upsertWorker(workerBody(1, { kv_events_endpoint: engine.endpoint }));
  await engine.waitForSubscribers();
  const lines = fixtureLines(FIXTURE);
  for (const l of lines) await engine.publish(l.seq, Buffer.from(l.payload_hex, 'hex'), { topic: l.topic });
  await until(service, 1, (c) => c.batchesApplied === lines.length, 'the fixture applied');
  const stored = counters(service, 1).blocksStored;
  const fixtureStored = lines.flatMap((l) => l.fields.events).filter((e) => e.token_ids !== undefined) // the stores
    .reduce((n, e) => n + (e.block_hashes as unknown[]).length, 0);
  assert.equal(stored, fixtureStored, 'every stored block of the fixture was applied');

  // Prometheus, scraping it every second
  const dir = mkdtempSync(join(tmpdir(), 'select-service-prometheus-'));
  const config = join(dir, 'prometheus.yml');
  writeFileSync(config, [
    'global:', '  scrape_interval: 1s', '  evaluation_interval: 1s',
    'scrape_configs:', '  - job_name: select-service', '    static_configs:', `      - targets: ['${base.slice('http://'.length)}']`, '',
  ].join('\n'));
  const promPort = await reservedPort();
  const prom = spawn(PROMETHEUS, [`--config.file=${config}`, `--storage.tsdb.path=${join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${promPort}`, '--log.level=warn'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let promOut = '';
  prom.stdout.on('data', (d: Buffer) => { promOut += d.toString(); });
  prom.stderr.on('data', (d: Buffer) => { promOut += d.toString(); });
  const promExit = new Promise<void>((resolve) => prom.once('exit', () => resolve()));
  t.after(async () => { prom.kill('SIGTERM'); await promExit; rmSync(dir, { recursive: true, force: true }); });

  const query = async (q: string): Promise<PromSample[]> => {
    if (prom.exitCode !== null) throw new Error(`prometheus exited:\n${promOut}`);
    const res = await fetch(`http://127.0.0.1:${promPort}/api/v1/query?query=${encodeURIComponent(q)}`);
    const body = await res.json() as { status: string; data: { result: PromSample[] }; error?: string };
    if (body.status !== 'success') throw new Error(`${q}: ${body.error}`);
    return body.data.result;
  };
  const ready = async (): Promise<boolean> => {
    try { return (await fetch(`http://127.0.0.1:${promPort}/-/ready`)).ok; } catch { return prom.exitCode !== null; }
  };
  await eventually(ready, 60_000, `Prometheus ready on 127.0.0.1:${promPort}`);
  assert.equal(prom.exitCode, null, promOut);

  // a client selecting over HTTP while Prometheus scrapes
  let selections = 0, stop = false;
  const prompt = JSON.stringify({ model_name: 'm', token_ids: lines[0].fields.events[0].token_ids });
  const client = (async () => {
    while (!stop) {
      const r = await fetch(`${base}/select`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: prompt });
      assert.equal(r.status, 200, await r.text());
      selections++;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();

  const rank = { job: 'select-service', model_name: 'm', routing_group: 'default', worker_id: '1', dp_rank: '0' };
  const one = async (q: string): Promise<PromSample | undefined> => { const r = await query(q); return r.length === 1 ? r[0] : undefined; };
  await eventually(async () => (await one('select_service_kv_blocks_total{op="stored"}')) !== undefined, 60_000, 'a scrape with the KV series');
  const blocks = await one('select_service_kv_blocks_total{op="stored"}');
  assert.deepEqual({ ...blocks!.metric }, { __name__: 'select_service_kv_blocks_total', instance: base.slice('http://'.length), op: 'stored', ...rank });
  assert.equal(Number(blocks!.value[1]), stored);
  const up = await one('select_service_kv_feed_up');
  assert.equal(up?.value[1], '1', 'the feed is connected and live');

  const rate = 'sum(rate(select_service_selections_total{route="select",outcome="ok"}[5s]))';
  await eventually(async () => Number((await one(rate))?.value[1] ?? 0) > 0, 60_000, 'a positive selection rate');
  stop = true;
  await client;
  // after the client stopped, the next scrapes report exactly the selections it made
  const total = 'select_service_selections_total{route="select",outcome="ok",model_name="m",routing_group="default"}';
  await eventually(async () => Number((await one(total))?.value[1]) === selections, 60_000, `${selections} selections in Prometheus`);
  const count = await one('select_service_selection_duration_seconds_count{route="select"}');
  assert.equal(Number(count?.value[1]), selections, 'the duration histogram counted every selection');
});

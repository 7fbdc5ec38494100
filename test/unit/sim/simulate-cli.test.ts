import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, rmSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { main } from '../../../src/simulate-cli.js';
import { serveStatic } from '../../../src/simulate-serve.js';
import { headLines } from '../../../src/sim/trace.js';
import { traceText } from './sim-helpers.js';

function io() {
  const o = { out: '', err: '' };
  return { o, io: { stdout: { write: (s: string) => { o.out += s; } }, stderr: { write: (s: string) => { o.err += s; } } } };
}

function tempDir(t: { after(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'sim-cli-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('simulate prints a table per policy, with progress on stderr', async (t) => {
  const file = join(tempDir(t), 'slice.jsonl');
  writeFileSync(file, headLines(traceText(), 300));
  const { o, io: s } = io();
  assert.equal(await main(['--trace', file, '--workers', '4', '--capacity-blocks', '256', '--policies', 'kv,round_robin'], s), 0);
  const lines = o.out.split('\n');
  assert.match(lines[0], /^300 requests, 4 workers x 1 rank\(s\), block 512, KV 256 blocks\/rank/);
  assert.match(lines[2], /^policy\s+hit\s+block hit\s+TTFT p50\/p90\/p99/);
  assert.match(lines[4], /^kv\s+\d+\.\d%/);
  assert.match(lines[5], /^round_robin\s+\d+\.\d%/);
  assert.match(o.err, /\[2\/2\] round_robin: 300\/300 requests/);
});

test('simulate --json: every metric, unbounded capacity as null', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'slice.jsonl');
  writeFileSync(file, headLines(traceText(), 200));
  const scorer = join(dir, 'scorer.js');
  writeFileSync(scorer, 'for (let i = 0; i < cands.length; i++) out[i] = -cands[i].deviceOverlapBlocks();');
  const { o, io: s } = io();
  const code = await main(['--trace', file, '--json', '--capacity-blocks', 'inf', '--policies', 'custom,least_loaded', '--scorer', scorer,
    '--seed', '5', '--speed', '2', '--dp-ranks', '2', '--workers', '2'], s);
  assert.equal(code, 0, o.err);
  const r = JSON.parse(o.out);
  assert.equal(r.fleet.capacityBlocks, null);
  assert.equal(r.seed, 5);
  assert.equal(r.speed, 2);
  assert.deepEqual(r.policies.map((p: { policy: string }) => p.policy), ['custom', 'least_loaded']);
  const p = r.policies[0];
  for (const k of ['hit_rate', 'block_hit_rate', 'ttft_ms', 'e2e_ms', 'queue_wait_ms', 'throughput', 'load_imbalance', 'evicted_blocks', 'per_rank', 'series']) {
    assert.ok(k in p, k);
  }
  assert.equal(p.per_rank.length, 4);
  assert.equal(p.evicted_blocks, 0);
});

test('--expected-output none: the clients send no expected_output_tokens (grid too); a bad value is a usage error', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'slice.jsonl');
  writeFileSync(file, headLines(traceText(), 100));
  // everything to the first candidate when the request says nothing of its output, else to the last
  const scorer = join(dir, 'scorer.js');
  writeFileSync(scorer, 'const said = ctx.expectedOutputTokens() !== undefined; for (let i = 0; i < cands.length; i++) out[i] = (i === 0) === said ? 1 : 0;');
  const ranks = async (...flags: string[]): Promise<number[]> => {
    const { o, io: s } = io();
    assert.equal(await main(['--trace', file, '--json', '--workers', '2', '--policies', 'custom', '--scorer', scorer, ...flags], s), 0, o.err);
    return JSON.parse(o.out).policies[0].per_rank.map((r: { requests: number }) => r.requests);
  };
  assert.deepEqual(await ranks(), [0, 100]);
  assert.deepEqual(await ranks('--expected-output', 'trace'), [0, 100]);
  assert.deepEqual(await ranks('--expected-output', 'none'), [100, 0]);
  const { o, io: s } = io();
  assert.equal(await main(['--grid', '--json', '--workloads', 'no_reuse:requests=60', '--fleets', '2x1', '--loads', '0.5', '--policies', 'custom',
    '--scorer', scorer, '--expected-output', 'none'], s), 0, o.err);
  const cell = JSON.parse(o.out).cells[0].policies[0];
  assert.deepEqual(cell.per_rank.map((r: { requests: number }) => r.requests), [60, 0]);
  const bad = io();
  assert.equal(await main(['--trace', file, '--expected-output', 'max_tokens'], bad.io), 2);
  assert.match(bad.o.err, /--expected-output: trace or none \(got max_tokens\)/);
});

test('--sweep runs every policy at every value and prints one table; --svg writes the plots', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'slice.jsonl');
  writeFileSync(file, headLines(traceText(), 200));
  const { o, io: s } = io();
  assert.equal(await main(['--trace', file, '--policies', 'kv,round_robin', '--workers', '2', '--sweep', 'speed=1,4', '--svg', join(dir, 'plots')], s), 0, o.err);
  const lines = o.out.trim().split('\n');
  assert.match(lines[0], /^200 requests, 2 workers x 1 rank\(s\), profile llama3.1-8b-h100; sweep of speed$/);
  assert.match(lines[2], /^speed\s+policy\s+hit\s+TTFT p50\s+TTFT p90/);
  assert.deepEqual(lines.slice(4).map((l) => l.split(/\s+/).slice(0, 2).join(' ')), ['1 kv', '1 round_robin', '4 kv', '4 round_robin']);
  const files = readdirSync(join(dir, 'plots')).sort();
  assert.deepEqual(files, ['sweep-speed-hit-rate.svg', 'sweep-speed-ttft-p50.svg', 'sweep-speed-ttft-p90.svg']);
  for (const f of files) {
    const svg = readFileSync(join(dir, 'plots', f), 'utf8');
    assert.match(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    assert.equal(svg.match(/class="series"/g)?.length, 2, f);
    assert.match(svg, /data-series="kv"/);
    assert.match(svg, /<title>round_robin: 4, /, 'hover titles carry the values');
  }
  assert.match(o.err, /wrote .*sweep-speed-ttft-p50\.svg/);
});

test('--svg without a sweep writes the run\'s charts; a bad sweep is a usage error', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'slice.jsonl');
  writeFileSync(file, headLines(traceText(), 100));
  let r = io();
  assert.equal(await main(['--trace', file, '--policies', 'kv', '--workers', '2', '--svg', dir], r.io), 0, r.o.err);
  assert.deepEqual(readdirSync(dir).filter((f) => f.endsWith('.svg')).sort(), ['hit-rate-over-time.svg', 'load-0.svg', 'ttft-distribution.svg']);
  r = io();
  assert.equal(await main(['--trace', file, '--sweep', 'colour=1,2'], r.io), 2);
  assert.match(r.o.err, /sweep: unknown knob "colour"/);
  r = io();
  assert.equal(await main(['--trace', file, '--sweep', 'speed=fast'], r.io), 2);
  assert.match(r.o.err, /needs speed=number,number/);
});

test('usage errors exit 2, run failures exit 1, --help exits 0', async () => {
  let s = io();
  assert.equal(await main(['--workers', '2'], s.io), 2);
  assert.match(s.o.err, /give one of --trace FILE and --workload SPEC/);
  s = io();
  assert.equal(await main(['--trace', 'x', '--workers', 'many'], s.io), 2);
  assert.match(s.o.err, /--workers: not a number: many/);
  s = io();
  assert.equal(await main(['--trace', 'x', '--queue-threshold', '1', '--queue-policy', 'lifo'], s.io), 2);
  assert.match(s.o.err, /--queue-policy: fcfs, wspt or lcfs \(got lifo\)/);
  s = io();
  assert.equal(await main(['--bogus'], s.io), 2);
  s = io();
  assert.equal(await main(['--trace', '/nonexistent/trace.jsonl'], s.io), 1);
  assert.match(s.o.err, /^simulate: ENOENT/);
  s = io();
  assert.equal(await main(['--help'], s.io), 0);
  assert.match(s.o.out, /^usage: select-service simulate/);
});

test('the static server serves files under its root only', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'index.html'), '<p>hi</p>');
  writeFileSync(join(dir, 'a.js'), 'x');
  const server = await serveStatic(dir, 0);
  t.after(() => server.close());
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const root = await fetch(`${base}/`);
  assert.equal(root.status, 200);
  assert.equal(root.headers.get('content-type'), 'text/html; charset=utf-8');
  assert.equal(await root.text(), '<p>hi</p>');
  assert.equal((await fetch(`${base}/a.js`)).headers.get('content-type'), 'text/javascript; charset=utf-8');
  assert.equal((await fetch(`${base}/missing.js`)).status, 404);
  assert.equal((await fetch(`${base}/..%2f..%2f..%2fetc%2fpasswd`)).status, 403);
  assert.equal((await fetch(`${base}/`, { method: 'POST' })).status, 405);
});

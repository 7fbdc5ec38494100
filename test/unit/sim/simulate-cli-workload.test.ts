/**
 * `simulate --workload`, `--write-trace`, `--fleet`, `--load` and `--grid` through the CLI's
 * main (the flags, the tables and the usage errors).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../../src/simulate-cli.js';
import { stable } from './sim-helpers.js';

function io() {
  const o = { out: '', err: '' };
  return { o, io: { stdout: { write: (s: string) => { o.out += s; } }, stderr: { write: (s: string) => { o.err += s; } } } };
}

async function run(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const s = io();
  const code = await main(args, s.io);
  return { code, ...s.o };
}

test('--write-trace writes the workload as JSONL that --trace replays identically', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sim-wl-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'mixed.jsonl');
  const gen = ['--workload', 'mixed:requests=300', '--seed', '4', '--fleet', '2x2'];
  const w = await run([...gen, '--write-trace', file]);
  assert.equal(w.code, 0, w.err);
  assert.equal(w.out, '');
  assert.match(w.err, /wrote 300 requests to .*mixed\.jsonl/);
  const lines = readFileSync(file, 'utf8').trim().split('\n');
  assert.equal(lines.length, 300);
  assert.match(lines[0], /^\{"timestamp":0,"input_length":\d+,"output_length":\d+,"hash_ids":\[[\d,]+\],"session_id":"[a-z_]+-\d+","tenant":"[a-z_]+"\}$/);
  const sim = ['--fleet', '2x2', '--seed', '4', '--policies', 'kv,session_affinity', '--load', '0.7', '--json'];
  const a = await run([...gen, ...sim]);
  const b = await run(['--trace', file, ...sim]);
  assert.equal(a.code, 0, a.err);
  assert.equal(b.code, 0, b.err);
  assert.equal(stable(JSON.parse(b.out)), stable(JSON.parse(a.out)), 'the same simulation, saturation included');
  assert.equal(JSON.parse(a.out).requests, 300);
});

test('--fleet mixed and --load: the header names both profiles and the measured saturation', async () => {
  const r = await run(['--workload', 'no_reuse:requests=400', '--fleet', 'mixed', '--load', '0.6', '--policies', 'kv']);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /^400 requests, 8 workers x 1 rank\(s\), .*profile 4 x llama3\.1-8b-h100 \+ 4 x llama3\.1-8b-a100, .*load 0\.6 of saturation \d+\.\d\d req\/s \(kv, \d passes\), speed x[\d.]+, seed 0/);
  const s = await run(['--workload', 'no_reuse:requests=300', '--workers', '2', '--sweep', 'load=0.5,1', '--policies', 'kv']);
  assert.equal(s.code, 0, s.err);
  assert.match(s.out, /sweep of load; saturation \d+\.\d\d req\/s \(kv\)\n/);
  assert.deepEqual(s.out.trim().split('\n').slice(4).map((l) => l.split(/\s+/).slice(0, 2).join(' ')), ['0.5 kv', '1 kv']);
});

test('--grid prints one table, or JSON, for any --policies', async () => {
  const args = ['--grid', '--workloads', 'system_prompt:requests=100,agentic:requests=100', '--fleets', '2x1', '--loads', '0.5', '--policies', 'kv,least_loaded'];
  const r = await run(args);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /^grid: 2 workload\(s\) x 1 fleet\(s\) x 1 load\(s\) x 2 policies/);
  assert.match(r.out, /\nagentic:requests=100 +2x1 +0\.5 +least_loaded +\d+ms[* ] /);
  assert.match(r.err, /\[1\/6\] saturation of system_prompt:requests=100 on 2x1: [\d.]+ req\/s\n/);
  const j = await run([...args, '--json']);
  const g = JSON.parse(j.out) as { cells: { policies: { policy: string }[] }[] };
  assert.deepEqual(g.cells.map((c) => c.policies.map((p) => p.policy)), [['kv', 'least_loaded'], ['kv', 'least_loaded']]);
});

test('workload, fleet, load and grid usage errors exit 2 and name the problem', async () => {
  const cases: [string[], RegExp][] = [
    [['--workload', 'no_reuse', '--trace', 'x'], /give one of --trace FILE and --workload SPEC/],
    [['--workload', 'chat'], /unknown workload "chat"/],
    [['--workload', 'no_reuse', '--limit', '5'], /--limit and --offset apply to --trace/],
    [['--workload', 'no_reuse', '--fleet', 'huge'], /unknown fleet "huge"/],
    [['--workload', 'no_reuse', '--load', '0.5', '--speed', '2'], /--load and --speed both set the arrival speed/],
    [['--workload', 'no_reuse', '--load', '0.5', '--sweep', 'speed=1,2'], /--sweep speed sets the arrival speed/],
    [['--grid', '--trace', 'x'], /--grid does not take --trace/],
    [['--grid', '--workers', '4'], /--grid takes its fleets from --fleets/],
    [['--grid', '--fleets', '8x1,tiny'], /unknown fleet "tiny"/],
    [['--grid', '--jobs', '0'], /--jobs: a whole number in 1\.\.256/],
  ];
  for (const [args, message] of cases) {
    const r = await run(args);
    assert.equal(r.code, 2, args.join(' '));
    assert.match(r.err, message);
  }
});

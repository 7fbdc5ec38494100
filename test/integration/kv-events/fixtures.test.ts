/**
 * Every captured vLLM fixture (exact publisher bytes, test/fixtures/vllm-kv-events/) replayed
 * through a real ZMQ PUB into a running service: after each of the seven steps, selections show
 * exactly the expected overlap and /dump lists exactly the expected blocks per tier.
 *
 * Scenario (fixture README): A = 3 blocks from the root (+ a 4th at step 3), B shares A's first 2,
 * C is stored with LoRA "sql-adapter", step 3 copies A0-A1 to CPU, step 4 removes B's blocks on
 * GPU and A1 on CPU, step 5 clears, step 6 stores A0 again. The v0.9 capture has neither
 * `medium` nor `lora_name`: its "CPU" copies arrive as device stores (no change), its step-4
 * removal of A1 hits the device tree (taking A2, A3 with it), and C matches without a LoRA.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { FIXTURE_DIR, fixtureHash, fixtureLines, type FixtureLine } from '../../support/kv-batches.js';
import { counters, dumpedBlocks, listeningWorker, selectOverlap, until } from '../../support/kv-service.js';
import { blockHashes } from '../../../src/core/index/hashing.js';

interface IndexEntry { file: string; dp_rank: number | null }
const files = JSON.parse(readFileSync(new URL('index.json', FIXTURE_DIR), 'utf8')) as IndexEntry[];

type Pair = [gpu: number, cpu: number];
/** Expected [gpu, cpu] blocks of prompts A, B, C (with its LoRA as stored) and C with the other LoRA choice. */
interface StepExpect { A: Pair; B: Pair; C: Pair; otherC: Pair; device: string[]; host: string[] }

function expectations(modern: boolean): StepExpect[] {
  const s = (A: number, B: number, C: number, device: string[], host: string[] = []): StepExpect =>
    ({ A: [A, A], B: [B, B], C: [C, C], otherC: [0, 0], device, host });
  const through2 = ['A0', 'A1', 'A2', 'B0', 'B1', 'C0', 'C1'];
  return [
    s(3, 2, 0, ['A0', 'A1', 'A2']),
    s(3, 4, 0, ['A0', 'A1', 'A2', 'B0', 'B1']),
    s(3, 4, 2, through2),
    s(4, 4, 2, [...through2, 'A3'], modern ? ['A0', 'A1'] : []),
    modern ? s(4, 2, 2, ['A0', 'A1', 'A2', 'A3', 'C0', 'C1'], ['A0']) : s(1, 1, 2, ['A0', 'C0', 'C1']),
    s(0, 0, 0, []),
    s(1, 1, 0, ['A0']),
  ];
}

/** Names -> engine hashes and the prompts' tokens, from the fixture's own fields. */
function scenario(lines: FixtureLine[]) {
  const ev = (step: number, i = 0) => lines[step].fields.events[i] as { block_hashes: unknown[]; token_ids: number[]; lora_name?: string | null };
  const names = new Map<string, bigint>();
  ev(0).block_hashes.forEach((h, i) => names.set(`A${i}`, fixtureHash(h)));
  ev(1).block_hashes.forEach((h, i) => names.set(`B${i}`, fixtureHash(h)));
  ev(2).block_hashes.forEach((h, i) => names.set(`C${i}`, fixtureHash(h)));
  names.set('A3', fixtureHash(ev(3).block_hashes[0]));
  return {
    names,
    A: [...ev(0).token_ids, ...ev(3).token_ids],
    B: [...ev(0).token_ids.slice(0, 32), ...ev(1).token_ids],
    C: ev(2).token_ids,
    lora: ev(2).lora_name ?? null,
  };
}

for (const { file, dp_rank } of files) {
  test(`fixture ${file}: each step shows the expected overlap and dump`, async (t) => {
    const lines = fixtureLines(file);
    const sc = scenario(lines);
    const modern = sc.lora !== null;
    const rank = dp_rank ?? 0;
    const { engine, service } = await listeningWorker(t, { data_parallel_start_rank: rank });
    const named = (tier: string, ns: string[]) => ns.map((n) => `${tier}:${sc.names.get(n)}`);

    for (const [step, exp] of expectations(modern).entries()) {
      const line = lines[step];
      await engine.publish(line.seq, Buffer.from(line.payload_hex, 'hex'), { topic: line.topic });
      await until(service, 1, (c) => c.batchesApplied === step + 1, `step ${step} applied`);
      const where = `${file} step ${step} (${line.step})`;
      const loraC = modern ? sc.lora ?? undefined : undefined, otherLora = modern ? undefined : 'sql-adapter';
      const got = {
        A: await selectOverlap(service, sc.A), B: await selectOverlap(service, sc.B),
        C: await selectOverlap(service, sc.C, loraC), otherC: await selectOverlap(service, sc.C, otherLora),
      };
      for (const k of ['A', 'B', 'C', 'otherC'] as const) {
        assert.deepEqual([got[k].gpu, got[k].cpu], exp[k], `${where}: prompt ${k}`);
      }
      assert.deepEqual(dumpedBlocks(service), [...named('device', exp.device), ...named('host_pinned', exp.host)].sort(), `${where}: dump`);
    }
    const c = counters(service, 1);
    assert.equal(c.gaps, 0);
    assert.equal(c.staleBatches, 0);
    assert.equal(c.droppedEvents.malformed + c.droppedFrames.undecodable + c.droppedFrames.badShape, 0);
    // The dump's tokens_hash of A0 is the service's own hash of A0's tokens, on the worker's rank.
    const part = service.dump()['m:default'] as { events: { event: { dp_rank: number; data: { stored: { blocks: { tokens_hash: bigint }[] } } } }[] };
    assert.equal(part.events[0].event.dp_rank, rank);
    assert.equal(part.events[0].event.data.stored.blocks[0].tokens_hash, blockHashes(sc.A.slice(0, 16), 16)[0]);
  });
}

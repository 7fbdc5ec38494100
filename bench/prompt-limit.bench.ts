/**
 * How long one large prompt holds the event loop (issue 15, defect 5): the time of one request,
 * during which no other selection runs, against its number of blocks. Per case: the JSON parse of
 * the body, then `select` and `select_and_reserve` + free in the core (schema, hashing, match,
 * load projection, booking, response), for the event-driven index and the approximate one
 * (bookings also recorded into the index), 8 workers.
 *
 *   npm run bench -- prompt-limit [--blocks 1024,4096,16384,65536] [--block-sizes 1,16] [--reps 15]
 *
 * Each number is the median of `--reps` runs after 3 warm-up runs (the minimum in brackets):
 * the machine is shared, so medians of a loaded minute are pessimistic.
 */
import { SelectionCore } from '../src/core/core.js';
import { parseRouterConfig } from '../src/core/config/config.js';
import { seededRng } from '../src/core/random.js';
import { parseJson } from '../src/core/wire/json.js';
import { quantile, timings } from './timings.js';

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(name);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : dflt;
}

/** Median and minimum of `reps` timed runs of `f` (ms), after 3 warm-up runs. */
async function time(reps: number, f: (i: number) => unknown): Promise<string> {
  const ms = await timings(reps, 3, f);
  return `${quantile(ms, 0.5).toFixed(1)} (${ms[0].toFixed(1)})`;
}

async function main(): Promise<void> {
  const blockCounts = arg('--blocks', '1024,4096,16384,65536').split(',').map(Number);
  const blockSizes = arg('--block-sizes', '1,16').split(',').map(Number);
  const reps = Number(arg('--reps', '15'));
  const rows = ['| index | block size | blocks | body MB | parse ms | select ms | select_and_reserve + free ms |', '|---|---|---|---|---|---|---|'];
  for (const mode of ['events', 'approximate'] as const) {
    for (const bs of blockSizes) {
      const config = parseRouterConfig(mode === 'events' ? {} : { DYN_ROUTER_USE_KV_EVENTS: 'false' });
      const core = SelectionCore.newLocal(config, { rng: seededRng(1), limits: { maxPromptBlocks: 1 << 22 } });
      for (let w = 1; w <= 8; w++) {
        core.upsertWorker({ worker_id: w, model_name: 'm', endpoint: `http://w${w}`, block_size: bs, kv_events_endpoint: `tcp://w${w}:5557` });
      }
      for (const blocks of blockCounts) {
        const tokens = (salt: number) => Array.from({ length: blocks * bs }, (_, i) => (i * 7919 + salt * 104729) % 128_000);
        const prompts = Array.from({ length: 4 }, (_, i) => tokens(i));
        const text = JSON.stringify({ model_name: 'm', token_ids: prompts[0] });
        const parse = await time(reps, () => parseJson(text));
        const select = await time(reps, (i) => core.select({ model_name: 'm', token_ids: prompts[(i + 4) & 3] }));
        const book = await time(reps, async (i) => {
          const id = `b${blocks}-${i}`;
          await core.selectAndReserve({ model_name: 'm', selection_id: id, token_ids: prompts[(i + 4) & 3] });
          core.freeReservation(id);
        });
        rows.push(`| ${mode} | ${bs} | ${blocks.toLocaleString()} | ${(text.length / 1048576).toFixed(1)} | ${parse} | ${select} | ${book} |`);
      }
      for (const p of core.partitionList()) p.destroy();
    }
  }
  console.log(rows.join('\n'));
}

void main();

/** Shared fixtures of the simulator tests: the conversation trace, small hand-made traces, a small grid. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseTrace, type Trace } from '../../../src/sim/trace.js';
import type { GridSpec } from '../../../src/sim/grid.js';
import { WORKLOAD_NAMES } from '../../../src/sim/workload/spec.js';

export const TRACE_PATH = join(process.cwd(), 'test/fixtures/mooncake/conversation_trace.jsonl');

let text: string | null = null;
/** The conversation trace's text (read once per test file). */
export function traceText(): string {
  text ??= readFileSync(TRACE_PATH, 'utf8');
  return text;
}

/** The conversation trace, or its first `limit` requests. */
export function conversationTrace(limit?: number): Trace {
  return parseTrace(traceText(), { limit });
}

/** A JSONL trace from rows `[timestamp, input_length, output_length, hash_ids]`. */
export function jsonl(rows: readonly [number, number, number, number[]][]): string {
  return rows.map(([t, i, o, h]) => JSON.stringify({ timestamp: t, input_length: i, output_length: o, hash_ids: h })).join('\n') + '\n';
}

/** Every workload family, small: a grid of 6 x 1 x 2 x 2 runs in a few seconds. */
export const SMALL_GRID: GridSpec = {
  workloads: WORKLOAD_NAMES.map((w) => `${w}:requests=150`), fleets: ['2x1'], loads: [0.5, 1.2], policies: 'kv,round_robin', seed: 5,
};

/** A result as JSON without its wall times (the only thing that varies between runs). */
export const stable = (g: unknown): string => JSON.stringify(g, (k, v: unknown) => (k === 'wall_ms' ? 0 : v));

/** Shared fixtures of the simulator tests: the conversation trace and small hand-made traces. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseTrace, type Trace } from '../../../src/sim/trace.js';

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

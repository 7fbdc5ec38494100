/**
 * A Mooncake-format request trace (kvcache-ai/Mooncake FAST'25; test/fixtures/mooncake/SOURCE.md),
 * one JSON object a line: `timestamp` (ms from the start), `input_length` and `output_length`
 * (tokens), `hash_ids` (prefix-block ids, {@link TRACE_BLOCK_TOKENS} tokens each; equal ids at
 * equal positions are a reusable prefix). Two optional fields, which the generated workloads
 * (workload/) write: `session_id` (a string naming the request's conversation or agent session)
 * and `tenant` (who sent it, in a mix); Mooncake's own files have neither.
 *
 * Held as flat typed arrays (12,031 requests and 288,500 ids of the conversation trace fit in a
 * few MB), so a trace is parsed once and replayed under every policy without per-request objects.
 * Isomorphic: the caller reads the file (Node) or the picked `File` (browser). This is the
 * project's one trace reader: the simulator, the benchmarks and the reference replay of the tests
 * all parse with {@link parseTrace}.
 */

/** Tokens per trace hash_id. */
export const TRACE_BLOCK_TOKENS = 512;

/** A parsed trace. Request `i` owns `hashIds[offsets[i] .. offsets[i + 1])`. */
export interface Trace {
  readonly length: number;
  /** Arrival times, ms from the trace start (non-decreasing). */
  readonly timestamps: Float64Array;
  readonly inputLength: Int32Array;
  readonly outputLength: Int32Array;
  readonly offsets: Int32Array;
  readonly hashIds: Int32Array;
  /** Per-request `session_id` (undefined: none), when any line of the trace carries one. */
  readonly sessions?: readonly (string | undefined)[];
  /** Per-request `tenant`, when any line carries one. */
  readonly tenants?: readonly (string | undefined)[];
}

/** One request of a trace, before it is packed into a {@link Trace}. */
export interface TraceRow { t: number; i: number; o: number; ids: ArrayLike<number>; session?: string; tenant?: string }

/** Options of {@link parseTrace}. */
export interface ParseTraceOptions {
  /** Keep only the first `limit` requests (after `offset`). */
  limit?: number;
  /** Drop the first `offset` requests; the rest start at time 0 (a held-out part of a trace). */
  offset?: number;
}

interface RawLine {
  timestamp?: unknown; input_length?: unknown; output_length?: unknown; hash_ids?: unknown; session_id?: unknown; tenant?: unknown;
}

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0;

/**
 * Parse JSONL trace text. Blank lines are skipped; a malformed line throws an Error naming its
 * line number. Requests are sorted by timestamp (stable), as the trace is a replay order.
 */
export function parseTrace(text: string, opts: ParseTraceOptions = {}): Trace {
  const offset = opts.offset ?? 0;
  const limit = offset + (opts.limit ?? Infinity);
  const rows: TraceRow[] = [];
  let start = 0;
  let lineNo = 0;
  while (start < text.length && rows.length < limit) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    lineNo++;
    const line = text.slice(start, end).trim();
    start = end + 1;
    if (line.length === 0) continue;
    let j: RawLine;
    try { j = JSON.parse(line) as RawLine; } catch (err) {
      throw new Error(`trace line ${lineNo}: not JSON (${err instanceof Error ? err.message : String(err)})`);
    }
    const ids = j.hash_ids;
    if (typeof j.timestamp !== 'number' || !Number.isFinite(j.timestamp) || !isCount(j.input_length) || !isCount(j.output_length)
      || !Array.isArray(ids) || !ids.every(isCount)) {
      throw new Error(`trace line ${lineNo}: needs timestamp, input_length, output_length and hash_ids (non-negative integers)`);
    }
    if (j.input_length > ids.length * TRACE_BLOCK_TOKENS) {
      throw new Error(`trace line ${lineNo}: input_length ${j.input_length} exceeds ${ids.length} hash_ids x ${TRACE_BLOCK_TOKENS} tokens`);
    }
    for (const k of ['session_id', 'tenant'] as const) {
      if (j[k] !== undefined && typeof j[k] !== 'string') throw new Error(`trace line ${lineNo}: ${k} must be a string`);
    }
    rows.push({
      t: j.timestamp, i: j.input_length, o: j.output_length, ids: ids as number[],
      session: j.session_id as string | undefined, tenant: j.tenant as string | undefined,
    });
  }
  rows.sort((a, b) => a.t - b.t);
  if (offset > 0) {
    rows.splice(0, offset);
    const t0 = rows.length > 0 ? rows[0].t : 0;
    for (const r of rows) r.t -= t0;
  }
  return packTrace(rows);
}

/**
 * Rows (in replay order) as a {@link Trace}; `sessions` / `tenants` exist when a row has one.
 * The one place a trace is packed: the reader and the workload generators both end here.
 */
export function packTrace(rows: readonly TraceRow[]): Trace {
  const n = rows.length;
  const offsets = new Int32Array(n + 1);
  for (let k = 0; k < n; k++) offsets[k + 1] = offsets[k] + rows[k].ids.length;
  const timestamps = new Float64Array(n), inputLength = new Int32Array(n), outputLength = new Int32Array(n);
  const hashIds = new Int32Array(offsets[n]);
  rows.forEach((r, k) => {
    timestamps[k] = r.t; inputLength[k] = r.i; outputLength[k] = r.o;
    hashIds.set(r.ids, offsets[k]);
  });
  const column = (f: (r: TraceRow) => string | undefined): (string | undefined)[] | undefined =>
    (rows.some((r) => f(r) !== undefined) ? rows.map(f) : undefined);
  const sessions = column((r) => r.session), tenants = column((r) => r.tenant);
  return { length: n, timestamps, inputLength, outputLength, offsets, hashIds, ...(sessions && { sessions }), ...(tenants && { tenants }) };
}

/**
 * The trace as JSONL that {@link parseTrace} reads back into an equal trace (Mooncake's four
 * fields first, then `session_id` and `tenant` where the trace has them).
 */
export function traceJsonl(trace: Trace): string {
  const lines = new Array<string>(trace.length);
  for (let i = 0; i < trace.length; i++) {
    const session = trace.sessions?.[i], tenant = trace.tenants?.[i];
    lines[i] = JSON.stringify({
      timestamp: trace.timestamps[i], input_length: trace.inputLength[i], output_length: trace.outputLength[i],
      hash_ids: Array.from(hashIdsOf(trace, i)),
      ...(session !== undefined && { session_id: session }), ...(tenant !== undefined && { tenant }),
    });
  }
  return lines.length > 0 ? `${lines.join('\n')}\n` : '';
}

/** The hash_ids of request `i` (a view into the trace's array). */
export function hashIdsOf(trace: Trace, i: number): Int32Array {
  return trace.hashIds.subarray(trace.offsets[i], trace.offsets[i + 1]);
}

/**
 * The session a request belongs to, or undefined: its `session_id` where the trace carries
 * them. Mooncake's files carry none; there every request starts with the same root block (id 0,
 * a shared system prompt), and the block after it is almost always distinct per conversation
 * (7,373 distinct second ids among 12,031 conversation requests), so the second hash_id names
 * the conversation.
 */
export function sessionOf(trace: Trace, i: number): string | undefined {
  if (trace.sessions) return trace.sessions[i];
  const at = trace.offsets[i] + 1;
  return at < trace.offsets[i + 1] ? `s${trace.hashIds[at]}` : undefined;
}

/** The first `n` lines of JSONL text (a sample slice of a trace). */
export function headLines(text: string, n: number): string {
  let end = 0;
  for (let k = 0; k < n && end >= 0; k++) {
    end = text.indexOf('\n', end);
    if (end >= 0) end++;
  }
  return end < 0 ? text : text.slice(0, end);
}

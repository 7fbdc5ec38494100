/**
 * Token sequences as Mooncake block ids, and the Poisson session driver every generator runs on.
 *
 * A {@link Context} is a prompt under construction: its tokens in blocks of
 * {@link TRACE_BLOCK_TOKENS}, each block named by an id. Equal ids at equal positions mean equal
 * content and an equal prefix before it (the trace format's rule), so a context that grows keeps
 * the ids of its full blocks, and its last partial block gets a new id (its content changed).
 * Forks share the ids of what they share. New ids come from one {@link BlockIdAllocator} per
 * workload, so tenants of a mix never share content by accident.
 */
import type { Rng } from '../../core/random.js';
import { TRACE_BLOCK_TOKENS, type TraceRow } from '../trace.js';
import { exponential } from './distributions.js';

/** Hash ids of new content, 0, 1, 2, ... (the trace keeps ids as 32-bit integers). */
export class BlockIdAllocator {
  private next = 0;
  /** Ids handed out so far. */
  get count(): number { return this.next; }
  take(): number {
    if (this.next >= 0x7fffffff) throw new Error('workload too large: more than 2^31 distinct blocks');
    return this.next++;
  }
}

/** A growing token sequence (see the file comment). */
export class Context {
  constructor(private readonly alloc: BlockIdAllocator, readonly ids: number[] = [], private length = 0) {}

  /** Tokens so far. */
  get tokens(): number { return this.length; }

  /** Append `n` new tokens: full blocks keep their ids, the partial last one and new ones get new ids. */
  append(n: number): this {
    if (n <= 0) return this;
    this.ids.length = Math.floor(this.length / TRACE_BLOCK_TOKENS);
    this.length += n;
    const need = Math.ceil(this.length / TRACE_BLOCK_TOKENS);
    while (this.ids.length < need) this.ids.push(this.alloc.take());
    return this;
  }

  /** An independent copy that shares this context's blocks. */
  fork(): Context { return new Context(this.alloc, this.ids.slice(), this.length); }
}

/** Bound of the hash ids of one generated trace (4 bytes each in memory). */
export const MAX_TRACE_IDS = 64_000_000;

/** Adds one request: arrival `t` (ms, speed 1) with prompt `ctx` (copied) and `output` tokens. */
export type Emit = (t: number, ctx: Context, output: number) => void;

/** Options of {@link poissonSessions}. */
export interface SessionArrivals {
  /** Requests wanted (at t >= 0). */
  requests: number;
  /** Sessions per millisecond. */
  sessionsPerMs: number;
  /** Mean requests per session (sizes the first guess of how long to generate; default 1). */
  perSession?: number;
  /**
   * Sessions start from `-warmMs`, and requests before 0 are dropped: the trace is a window of a
   * running service (sessions already under way when it opens), not a start from empty, so the
   * request rate is the same at its start as in its middle.
   */
  warmMs: number;
  /** Session ids are `${tenant}-${k}`. */
  tenant: string;
}

/**
 * Requests of sessions that start as a Poisson process; `session(start, emit)` emits one
 * session's requests at times >= start. Returns the first `requests` requests at t >= 0 in time
 * order, times rounded to microseconds (what JSONL carries).
 */
export function poissonSessions(rng: Rng, o: SessionArrivals, session: (start: number, emit: Emit) => void): TraceRow[] {
  const rows: TraceRow[] = [];
  let k = 0, start = -o.warmMs;
  let session_id = '', total = 0;
  const emit: Emit = (t, ctx, output) => {
    const at = Math.round(t * 1000) / 1000;
    if (at < 0) return;
    total += ctx.ids.length;
    if (total > MAX_TRACE_IDS) throw new Error(`workload too large: more than ${MAX_TRACE_IDS} hash_ids; lower requests or lengths`);
    rows.push({ t: at, i: ctx.tokens, o: output, ids: ctx.ids.slice(), session: session_id, tenant: o.tenant });
  };
  // A request earlier than the latest session start is final (sessions start in order and emit
  // at or after their start): generate until `requests` of them are known, checking at a horizon
  // that grows by a quarter each time it falls short.
  let horizon = o.requests / (o.sessionsPerMs * (o.perSession ?? 1));
  for (;;) {
    start += exponential(rng, 1 / o.sessionsPerMs);
    if (start > horizon) {
      let final = 0;
      for (const r of rows) if (r.t < start) final++;
      if (final >= o.requests) break;
      horizon = start + Math.max(1, horizon) * 0.25;
    }
    session_id = `${o.tenant}-${k++}`;
    session(start, emit);
  }
  rows.sort((a, b) => a.t - b.t);
  rows.length = Math.min(rows.length, o.requests);
  return rows;
}

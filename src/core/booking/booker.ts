/**
 * What every booking shares (Dynamo `lib/kv-router/src/services/selection/core/run.rs`, `lib/kv-router/src/services/selection/core/reservations.rs`, `lib/kv-router/src/services/selection/affinity.rs`, `lib/kv-router/src/services/selection/core/hint.rs`): holding and committing a session
 * binding, booking a choice into the partition's loads (with approximate recording and the
 * replica-sync admission event), the kv_hint of a booking, and generated selection ids.
 */
import { SelectionError, shuttingDown } from '../errors.js';
import { buildKvHint, hintCapable } from './hints.js';
import type { KvHint } from '../wire/types.js';
import type { SelectAndReserveRequest } from '../wire/schemas.js';
import type { WorkerEntry } from '../catalog/catalog.js';
import type { Partition } from '../catalog/partition.js';
import type { AffinityLease, Hold } from './affinity.js';
import type { NormalizedPrompt } from '../index/prompt.js';
import type { RouterConfig } from '../config/config.js';
import type { CoreHooks } from '../options.js';
import type { Rng } from '../random.js';
import type { Choice } from '../select/scheduler.js';

/** What booking reads of its core. */
export interface BookerContext {
  readonly config: RouterConfig;
  readonly rng: Rng;
  readonly hooks: CoreHooks;
  readonly shuttingDown: boolean;
}

export class Booker {
  constructor(private readonly s: BookerContext) {}

  /**
   * The session a request steers by, when affinity is on: `session_context.session_id` wins over
   * `session_id`; an explicit `affinity_target` or `pinned_worker` skips steering (Dynamo `lib/kv-router/src/services/selection/affinity.rs`).
   */
  steerableSession(part: Partition, req: SelectAndReserveRequest): string | undefined {
    if (!part.affinity || req.affinity_target || req.pinned_worker) return undefined;
    return req.session_context?.session_id ?? req.session_id;
  }

  /**
   * Holds a session for a booking: waits out another booking's initialization, re-initializes a
   * binding whose worker departed, and routes unpinned (null) when the table is full.
   */
  async holdSession(part: Partition, sessionId: string | undefined): Promise<Hold | null> {
    const table = part.affinity;
    if (!table || sessionId === undefined) return null;
    for (;;) {
      const h = table.acquire(sessionId);
      if (h.kind === 'wait') {
        await h.settled;
        if (this.s.shuttingDown) throw shuttingDown();
        continue;
      }
      if (h.kind === 'full') return null;
      if (h.kind === 'bound' && !part.targetLive(h.target)) { table.invalidate(h.lease); continue; }
      return h;
    }
  }

  /** Commits a held session to the booked rank (400 in hard mode when it went elsewhere). */
  commitSession(part: Partition, hold: Hold | null, workerId: bigint, dpRank: number): AffinityLease | undefined {
    if (!hold || !part.affinity) return undefined;
    return part.affinity.commit(hold, { workerId, dpRank }) ?? undefined;
  }

  /** Book a choice under `id` (the claim is the caller's). */
  book(c: Choice, id: string, track: boolean, prefillTokens: number, expectedOutputTokens: number | undefined, loraName: string | undefined): void {
    const w = c.entry.req.worker_id;
    const loads = c.part.loads;
    const ok = loads.bookRow(id, c.row >= 0 ? c.row : loads.rowOf(w, c.dpRank), {
      seq: c.prompt.seqWords, nBlocks: c.prompt.nBlocks, trackPrefillTokens: track, prefillTokens,
      expectedOutputTokens, islTokens: c.prompt.isl, loraName, stepTokens: c.entry.req.max_num_batched_tokens,
      slots: c.entry.req.max_num_seqs,
    });
    if (!ok) throw new SelectionError('SEL_SEQUENCE_DUPLICATE_REQUEST', `request ${id} is already booked`);
    // approximate / predicted indexing records bookings with routing hashes (never hash-only ones)
    const locals = c.prompt.locals;
    if (locals && locals.length > 0) c.part.recorder()?.record(w, c.dpRank, locals);
    c.part.policy?.onBooked?.({ workerId: w, dpRank: c.dpRank, prefixWords: c.prompt.seqWords, promptTokens: c.prompt.isl });
    this.s.hooks.onLifecycle?.({
      modelName: c.part.modelName, routingGroup: c.part.routingGroup, blockSize: c.part.blockSize, requestId: id,
      workerId: w, dpRank: c.dpRank, loraName: loraName ?? null, kind: 'add', seq: c.prompt.seq, trackPrefillTokens: track,
      expectedOutputTokens: expectedOutputTokens ?? null, prefillTokens: track ? prefillTokens : 0,
    });
  }

  /** kv_hint of a booking: only with the event-driven primary (no side index) and hint-capable workers. */
  kvHint(c: Choice, id: string): KvHint | undefined {
    if (!this.s.config.useKvEvents || this.s.config.routerPredictedTtlSecs !== null) return undefined;
    if (!c.prompt.locals || c.prompt.locals.length === 0 || !hintCapable(c.part.workers.values())) return undefined;
    const depth = Number(c.overlap.dp[String(c.dpRank)] ?? 0) / c.part.blockSize;
    return buildKvHint(c.part.index, c.part.workers.values(), { workerId: c.entry.req.worker_id, dpRank: c.dpRank },
      c.entry.req.router_hint_worker_type, depth, c.prompt.locals, id);
  }

  uuid(): string {
    const a = this.s.rng.u64(), b = this.s.rng.u64();
    const hex = ((a << 64n) | b).toString(16).padStart(32, '0').split('');
    hex[12] = '4';
    hex[16] = '89ab'[parseInt(hex[16], 16) & 3];
    const s = hex.join('');
    return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20)}`;
  }

  /** A Choice for a fixed worker rank (explicit and replayed bookings). */
  fixedChoice(part: Partition, entry: WorkerEntry, dpRank: number, prompt: NormalizedPrompt): Choice {
    return {
      part, entry, dpRank, row: -1, prompt, overlap: { longest_matched: 0, gpu: 0, dp: {}, cpu: 0, disk: 0 },
      effectivePrefillTokens: 0, potentialDecodeBlocks: 0, activePrefillTokens: 0,
    };
  }
}

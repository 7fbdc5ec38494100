/**
 * Reservations and their lifecycle (api §2.9-§2.12, §5): the replay form (books exactly what a
 * cached `/select` captured, single-use, failures keep the entry), the explicit form (discards
 * the cached entry, strict booking of a schedulable rank), prefill completion (idempotent,
 * re-published), output blocks (local only) and free.
 */
import { applyOverride } from './config/config.js';
import {
  SelectionError, decayFractionOutOfRange, effectivePrefillExceedsIsl, pendingNotFound, reservationNotFound,
  schedulableWorkerNotFound,
} from './errors.js';
import { OutputBlockRequestSchema, ReservationRequestSchema } from './wire/schemas.js';
import { checkPromptFields, type NormalizedPrompt } from './index/prompt.js';
import type { AffinityLease, Hold } from './booking/affinity.js';
import type { Partition } from './catalog/partition.js';
import { effectivePrefillTokens } from './select/selector.js';
import { rankKeyOf } from './index/slots.js';
import { parseBody, type CoreState } from './core-state.js';
import type { Booker } from './booking/booker.js';
import type { Scheduler } from './select/scheduler.js';
import type { ReservationResponse, StatusOk } from './wire/types.js';

export class ReservationOps {
  constructor(private readonly s: CoreState, private readonly sched: Scheduler, private readonly booker: Booker,
    private readonly live: () => void) {}

  async createReservation(input: unknown): Promise<ReservationResponse> {
    this.live();
    const req = parseBody(ReservationRequestSchema, input);
    const { model_name: model, routing_group: group, selection_id: id } = req;
    if (req.worker_id === undefined) return this.replayReservation(model, group, id);

    // explicit form: the cached selection is discarded first
    this.s.pending.discard(model, group, id);
    checkPromptFields(req, false);
    const part = this.s.readyPartition(model, group);
    const eff = applyOverride(this.s.config, req.router_config_override);
    const prompt = this.s.normalizer.normalize(req, part, eff.assumeKvReuse);
    if (req.effective_prefill_tokens !== undefined && req.effective_prefill_tokens > prompt.isl) {
      throw effectivePrefillExceedsIsl(req.effective_prefill_tokens, prompt.isl);
    }
    const dpRank = req.dp_rank ?? 0;
    const entry = part.isSchedulable(req.worker_id, dpRank);
    if (!entry) throw schedulableWorkerNotFound(req.worker_id, model, group);
    const track = req.track_prefill_tokens ?? (req.effective_prefill_tokens !== undefined ? true : eff.trackPrefillTokens);
    const claim = this.s.reservations.claim(id, part.key);
    try {
      // without a client value: the booked rank's own cache credit (only its overlap row is needed)
      const effective = req.effective_prefill_tokens ?? effectivePrefillTokens(prompt.isl,
        this.sched.overlapCache(part, prompt, eff).get(rankKeyOf(req.worker_id, dpRank))?.cachedTokens ?? 0);
      const choice = this.booker.fixedChoice(part, entry, dpRank, prompt);
      this.booker.book(choice, id, track, effective, req.expected_output_tokens, req.lora_name);
      this.s.reservations.commit(claim, req.worker_id, dpRank);
    } catch (err) {
      this.s.reservations.release(claim);
      throw err;
    }
    return { selection_id: id, model_name: model, routing_group: group, worker_id: req.worker_id, dp_rank: dpRank, endpoint: entry.req.endpoint ?? '' };
  }

  /** Replay form (api §5.2): book only the cached inputs; failures keep the entry. */
  private async replayReservation(model: string, group: string, id: string): Promise<ReservationResponse> {
    const hit = this.s.pending.peek(model, group, id);
    if (!hit) throw pendingNotFound(id, model, group);
    const v = hit.value;
    const part = this.s.readyPartition(model, group);
    const entry = part.isSchedulable(v.workerId, v.dpRank);
    if (!entry) throw schedulableWorkerNotFound(v.workerId, model, group, v.dpRank);
    const claim = this.s.reservations.claim(id, part.key);
    let hold: Hold | null = null;
    try {
      // the cached session binds like /select_and_reserve: hold, commit to the cached rank, book
      hold = await this.booker.holdSession(part, v.sessionId);
      if (!part.isSchedulable(v.workerId, v.dpRank)) throw schedulableWorkerNotFound(v.workerId, model, group, v.dpRank);
      let lease: AffinityLease | undefined;
      try {
        lease = this.booker.commitSession(part, hold, v.workerId, v.dpRank);
      } catch (err) {
        hold = null;
        // an affinity rejection consumes the cached selection (api §5.2)
        this.s.pending.removeIfGeneration(model, group, id, hit.generation);
        throw err;
      }
      hold = null;
      const seq = v.sequenceHashes;
      const prompt: NormalizedPrompt = {
        isl: v.islTokens, nBlocks: seq.length, locals: v.blockHashes, seq,
        seqWords: new Uint32Array(seq.buffer, seq.byteOffset, seq.length * 2), loraName: v.loraName, fromHashes: true,
      };
      const choice = this.booker.fixedChoice(part, entry, v.dpRank, prompt);
      try {
        this.booker.book(choice, id, v.trackPrefillTokens, v.effectivePrefillTokens, v.expectedOutputTokens, v.loraName);
      } catch (err) {
        if (lease) part.affinity?.release(lease);
        throw err;
      }
      this.s.reservations.commit(claim, v.workerId, v.dpRank, lease);
    } catch (err) {
      if (hold) part.affinity?.abandon(hold);
      this.s.reservations.release(claim);
      throw err;
    }
    this.s.pending.removeIfGeneration(model, group, id, hit.generation);
    return { selection_id: id, model_name: model, routing_group: group, worker_id: v.workerId, dp_rank: v.dpRank, endpoint: entry.req.endpoint ?? '' };
  }

  /** The live booking of a reservation id, or 404. */
  private booking(id: string): { part: Partition; workerId: bigint; dpRank: number } {
    const row = this.s.reservations.lookup(id);
    const part = row ? this.s.partitions.get(row.partitionKey) : undefined;
    if (!row || !part || !part.loads.has(id)) throw reservationNotFound(id);
    return { part, workerId: row.workerId, dpRank: row.dpRank };
  }

  prefillComplete(reservationId: string): StatusOk {
    this.live();
    const b = this.booking(reservationId);
    b.part.loads.prefillComplete(reservationId);
    this.s.hooks.onLifecycle?.({
      modelName: b.part.modelName, routingGroup: b.part.routingGroup, blockSize: b.part.blockSize,
      requestId: reservationId, workerId: b.workerId, dpRank: b.dpRank, kind: 'prefill_complete',
    });
    this.sched.drain(b.part);
    return { status: 'ok' };
  }

  addOutputBlock(reservationId: string, body: unknown): StatusOk {
    this.live();
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      throw new SelectionError('SEL_UNPROCESSABLE', 'Failed to deserialize the JSON body into the target type: expected a JSON object');
    }
    const req = parseBody(OutputBlockRequestSchema, body);
    const f = req.decay_fraction;
    if (f !== undefined && !(f >= 0 && f <= 1)) throw decayFractionOutOfRange();
    const b = this.booking(reservationId);
    b.part.loads.addOutputBlock(reservationId, f);
    return { status: 'ok' };
  }

  freeReservation(reservationId: string): StatusOk {
    this.live();
    const b = this.booking(reservationId);
    b.part.loads.free(reservationId);
    this.s.removeRow(reservationId);
    this.s.hooks.onLifecycle?.({
      modelName: b.part.modelName, routingGroup: b.part.routingGroup, blockSize: b.part.blockSize,
      requestId: reservationId, workerId: b.workerId, dpRank: b.dpRank, kind: 'free',
    });
    this.sched.drain(b.part);
    return { status: 'ok' };
  }
}

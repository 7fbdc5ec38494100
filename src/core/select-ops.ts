/**
 * The two selection operations (api §2.7, §2.8): query-only `select` (books nothing; caches
 * booking inputs under a selection_id; advisory adds worker load) and `select_and_reserve`
 * (claims the id, holds the session, schedules, commits the binding and books atomically).
 */
import { applyOverride } from './config/config.js';
import { SelectAndReserveRequestSchema, SelectRequestSchema, type SelectAndReserveRequest } from './wire/schemas.js';
import { checkPromptFields } from './index/prompt.js';
import type { Hold } from './booking/affinity.js';
import { parseBody, type CoreState } from './core-state.js';
import type { Booker } from './booking/booker.js';
import type { Choice, OverlapCache, Scheduler } from './select/scheduler.js';
import type { SelectOptions, SelectResponse } from './wire/types.js';

export class SelectOps {
  constructor(private readonly s: CoreState, private readonly sched: Scheduler, private readonly booker: Booker,
    private readonly live: () => void) {}

  async select(input: unknown, opts: SelectOptions = {}): Promise<SelectResponse> {
    this.live();
    const req = parseBody(SelectRequestSchema, input);
    checkPromptFields(req);
    const part = this.s.readyPartition(req.model_name, req.routing_group);
    const eff = applyOverride(this.s.config, req.router_config_override);
    const prompt = this.s.normalizer.normalize(req, part, eff.assumeKvReuse);
    const finish = (choice: Choice): SelectResponse => {
      if (req.selection_id !== undefined) {
        this.s.pending.insert(req.model_name, req.routing_group, req.selection_id, {
          workerId: choice.entry.req.worker_id, dpRank: choice.dpRank,
          sequenceHashes: prompt.seq, blockHashes: prompt.locals,
          islTokens: prompt.isl, effectivePrefillTokens: choice.effectivePrefillTokens,
          expectedOutputTokens: req.expected_output_tokens, trackPrefillTokens: eff.trackPrefillTokens,
          loraName: req.lora_name, sessionId: req.session_context?.session_id ?? req.session_id,
        });
      }
      const res = this.sched.response(choice, req.selection_id);
      if (req.advisory) {
        const w = choice.entry.req;
        const cap = w.max_num_batched_tokens ?? null;
        res.worker_load = { active_prefill_tokens: choice.activePrefillTokens, prefill_token_capacity: cap };
        if (w.total_kv_blocks !== undefined) res.worker_load.total_kv_blocks = w.total_kv_blocks;
        const t = this.s.config.conditionalDisaggPrefillBusyThreshold;
        if (t !== null && cap !== null) res.worker_load.prefill_busy = choice.activePrefillTokens > t * cap;
      }
      return res;
    };
    // query-only: a live binding steers, none is created (api §8)
    const sid = this.booker.steerableSession(part, req);
    const bound = sid === undefined ? undefined : part.affinity?.query(sid);
    const steer = bound && part.targetLive(bound) ? bound : undefined;
    if (req.advisory) return finish(this.sched.schedule(part, req, prompt, eff, undefined, steer));
    return this.sched.admit(part, req, prompt, eff, opts, steer, (cache) => finish(this.sched.schedule(part, req, prompt, eff, cache, steer)), () => {});
  }

  async selectAndReserve(input: unknown, opts: SelectOptions = {}): Promise<SelectResponse> {
    this.live();
    const req: SelectAndReserveRequest = parseBody(SelectAndReserveRequestSchema, input);
    checkPromptFields(req);
    const part = this.s.readyPartition(req.model_name, req.routing_group);
    const eff = applyOverride(this.s.config, req.router_config_override);
    const prompt = this.s.normalizer.normalize(req, part, eff.assumeKvReuse);
    const id = req.selection_id ?? this.booker.uuid();
    const claim = this.s.reservations.claim(id, part.key);
    let hold: Hold | null;
    try {
      hold = await this.booker.holdSession(part, this.booker.steerableSession(part, req));
    } catch (err) {
      this.s.reservations.release(claim);
      throw err;
    }
    const steer = hold?.kind === 'bound' ? hold.target : undefined;
    const drop = (): void => {
      if (hold) part.affinity?.abandon(hold);
      this.s.reservations.release(claim);
    };
    const run = (cache?: OverlapCache): SelectResponse => {
      try {
        const choice = this.sched.schedule(part, req, prompt, eff, cache, steer);
        const lease = this.booker.commitSession(part, hold, choice.entry.req.worker_id, choice.dpRank);
        hold = null;
        try {
          this.booker.book(choice, id, eff.trackPrefillTokens, choice.effectivePrefillTokens, req.expected_output_tokens, req.lora_name);
        } catch (err) {
          if (lease) part.affinity?.release(lease);
          throw err;
        }
        this.s.reservations.commit(claim, choice.entry.req.worker_id, choice.dpRank, lease);
        // the booking fields follow selection_id, in Dynamo's SelectResponse field order
        const { selection_id: _id, ...selection } = this.sched.response(choice, id);
        const res: SelectResponse = {
          selection_id: id, sequence_hashes: Array.from(prompt.seq, (h) => BigInt.asIntN(64, h)), isl_tokens: prompt.isl,
          track_prefill_tokens: eff.trackPrefillTokens, ...selection,
        };
        const hint = this.booker.kvHint(choice, id);
        if (hint) res.kv_hint = hint;
        return res;
      } catch (err) {
        drop();
        throw err;
      }
    };
    return this.sched.admit(part, req, prompt, eff, opts, steer, run, drop);
  }
}

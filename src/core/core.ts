/**
 * SelectionCore: the one object that owns every operation of the selection API — the worker
 * catalog, selection, reservations and their lifecycle, inspection, and the events replica peers
 * send. Isomorphic: time and randomness are injected, there are no timers (the host calls
 * {@link SelectionCore.maintain} periodically; every operation also runs due maintenance first),
 * and KV-event listeners are attached through an {@link IndexFeed}.
 *
 * It is a {@link WorkerCatalog} (catalog/worker-catalog.ts: the workers, their partitions and the
 * catalog operations) extended with selection and booking. The machinery lives in the concept
 * folders: `catalog/` (worker records, partitions), `index/`
 * (the wasm prefix index, prompts), `load/` (active load), `select/` (cost, policies, queue,
 * scheduler), `booking/` (reservations, pending selections, session affinity, kv_hint); this file
 * is the order in which an operation uses them.
 *
 * Rule for every mutation: validate first (schemas, prompt fields, readiness, claims), then
 * change state; a failure after a claim releases it, so nothing stays half-booked.
 */
import { ConfigError, LIMITS, applyOverride, type EffectiveRouterValues, type RouterConfig } from './config/config.js';
import {
  SelectionError, bookingLimit, decayFractionOutOfRange, effectivePrefillExceedsIsl, pendingNotFound, schedulableWorkerNotFound,
  subscriberShutdown, type ReservationEnd,
} from './errors.js';
import {
  FilterQuerySchema, OutputBlockRequestSchema, PromptQuerySchema, ReservationRequestSchema, SelectAndReserveRequestSchema,
  SelectRequestSchema, parseBody, type FilterQuery, type SelectAndReserveRequest,
} from './wire/schemas.js';
import { partitionKeyOf } from './catalog/catalog.js';
import type { Partition } from './catalog/partition.js';
import { WorkerCatalog, type WorkerChange } from './catalog/worker-catalog.js';
import { checkPromptFields, PromptNormalizer, type NormalizedPrompt, type PromptFields } from './index/prompt.js';
import type { RouterEvent } from './index/kv-index.js';
import { Scheduler, type Choice, type OverlapCache, type SchedulerContext } from './select/scheduler.js';
import { effectivePrefillTokens, untrackedBlocks } from './select/selector.js';
import { overlapScoreRows } from './select/overlap.js';
import type { AffinityLease, Hold } from './booking/affinity.js';
import { Booker, type BookerContext } from './booking/booker.js';
import { PendingSelectionCache } from './booking/pending.js';
import { ReservationIndex, type ClaimToken } from './booking/reservations.js';
import type { CoreOptions, SelectionEvent, SelectionRoute } from './options.js';
import type { AffinityEvent, LifecycleEvent, ReplicaEventOutcome } from './wire/events.js';
import { MS, systemRng, type Rng } from './random.js';
import type {
  DumpResponse, ModelLoadResponse, OverlapScoresResponse, PotentialLoad, ReservationResponse,
  SelectOptions, SelectResponse, SelectionApi, StatusOk, WorkerLoad,
} from './wire/types.js';

/** `Result` of {@link SelectionCore.tryNewLocal}. */
export type CoreResult = { ok: true; core: SelectionCore } | { ok: false; error: ConfigError };

/** What every prompt request carries: the prompt, its partition and an optional router override. */
type PromptRequest = PromptFields & { model_name: string; routing_group: string; router_config_override?: SelectAndReserveRequest['router_config_override'] };

/** What an operation tells {@link SelectionCore.observed} beyond its response. */
interface Observation { booked?: SelectionEvent['booked'] }

/** How a booking freed by a DELETE, or by a replica peer's free, ended (one shared record each). */
const FREED: ReservationEnd = { kind: 'freed', byPeer: false };
const FREED_BY_PEER: ReservationEnd = { kind: 'freed', byPeer: true };

/**
 * `prefill_token_capacity` of an advisory `worker_load` for a worker without
 * `max_num_batched_tokens`: Dynamo's `DEFAULT_MAX_BATCHED_TOKENS` (lib/kv-router/src/scheduling/queue.rs).
 */
export const DEFAULT_PREFILL_TOKEN_CAPACITY = 10_000_000;

/** A prompt request after its opening steps: the partition it routes in, the effective knobs, the hashes. */
interface Opened<R> { req: R; part: Partition; eff: EffectiveRouterValues; prompt: NormalizedPrompt }

export class SelectionCore extends WorkerCatalog implements SelectionApi, SchedulerContext, BookerContext {
  /** The process-wide reservation index (inspection, tests); it remembers how bookings ended for the expiry window. */
  readonly reservations: ReservationIndex<AffinityLease>;
  /** The pending-selection cache (inspection, tests). */
  readonly pending: PendingSelectionCache;
  /** Start-up warnings for the host to log (e.g. an unsupported approximate cache policy). */
  readonly warnings: string[] = [];
  private readonly normalizer: PromptNormalizer;
  private readonly sched: Scheduler;
  private readonly booker: Booker;
  private lastSweep: number;
  private lastRecheck: number;
  private lastReap: number;

  /** Use {@link SelectionCore.tryNewLocal} (it validates the options first). */
  protected constructor(config: RouterConfig, o: CoreOptions, normalizer: PromptNormalizer, rng: Rng) {
    super(config, o, rng);
    this.reservations = new ReservationIndex<AffinityLease>({
      clock: this.clock, ttlSecs: config.activeRequestExpirySecs,
      maxEntries: LIMITS.endedReservationsMaxEntries, maxBytes: LIMITS.endedReservationsMaxBytes,
    });
    const c = o.selectionCache ?? {};
    this.pending = new PendingSelectionCache({
      clock: this.clock,
      ttlSecs: c.ttlSecs ?? LIMITS.selectionCacheTtlSecs,
      maxEntries: c.maxEntries ?? LIMITS.selectionCacheMaxEntries,
      maxBytes: c.maxBytes ?? LIMITS.selectionCacheMaxBytes,
    });
    this.normalizer = normalizer;
    this.sched = new Scheduler(this);
    this.booker = new Booker(this);
    this.lastSweep = this.lastRecheck = this.lastReap = this.clock.now();
    if (!config.useKvEvents && config.routerApproximateCachePolicy === 'lru') {
      this.warnings.push('router_approximate_cache_policy=lru is not supported by the standalone selector; bookings use TTL retention (router_ttl_secs) instead');
    }
    this.warnings.push(...ignoredSettings(config));
  }

  /**
   * An unsynchronised local core (tests, simulations, embedding). Fails with a ConfigError for
   * an invalid tracking-hash configuration (keyed mode without a 32-byte key or a key id), an
   * unknown worker-selection policy name, or a session-affinity TTL outside 1 .. 31,536,000 s.
   */
  static tryNewLocal(config: RouterConfig, options: CoreOptions = {}): CoreResult {
    const rng = options.rng ?? systemRng();
    try {
      return { ok: true, core: new SelectionCore(config, options, SelectionCore.normalizerFor(config, options, rng), rng) };
    } catch (err) {
      if (err instanceof ConfigError) return { ok: false, error: err };
      return { ok: false, error: new ConfigError([err instanceof Error ? err.message : String(err)]) };
    }
  }

  /** Like tryNewLocal, throwing the ConfigError. */
  static newLocal(config: RouterConfig, options: CoreOptions = {}): SelectionCore {
    const r = SelectionCore.tryNewLocal(config, options);
    if (!r.ok) throw r.error;
    return r.core;
  }

  /** Checks the options a core cannot start without and makes its prompt normalizer (throws ConfigError). */
  protected static normalizerFor(config: RouterConfig, options: CoreOptions, rng: Rng): PromptNormalizer {
    if (config.routerTrackingHash === 'keyed-xxh3-v1') {
      if (!options.trackingKey || options.trackingKey.length !== 32) {
        throw new ConfigError(['DYN_ROUTER_TRACKING_KEY_FILE: keyed-xxh3-v1 requires a 32-byte tracking key']);
      }
      if (!config.routerTrackingKeyId) throw new ConfigError(['DYN_ROUTER_TRACKING_KEY_ID: keyed-xxh3-v1 requires router_tracking_key_id']);
    }
    const aff = options.sessionAffinity;
    if (aff && !(aff.ttlSecs >= LIMITS.sessionAffinityTtlMinSecs && aff.ttlSecs <= LIMITS.sessionAffinityTtlMaxSecs)) {
      throw new ConfigError([`--session-affinity-ttl-secs: must be between ${LIMITS.sessionAffinityTtlMinSecs} and ${LIMITS.sessionAffinityTtlMaxSecs} (got ${aff.ttlSecs})`]);
    }
    if (aff && aff.mode !== 'hard' && aff.mode !== 'soft') {
      throw new ConfigError([`--session-affinity-mode: must be hard or soft (got ${String(aff.mode)})`]);
    }
    const inst = options.policyConfig?.aggregated;
    const name = inst?.type ?? config.workerSelectionPolicy;
    if (name && name !== 'default' && !options.policies?.has(name)) {
      const where = inst ? 'DYN_ROUTER_POLICY_CONFIG worker_selection' : 'DYN_ROUTER_WORKER_SELECTION_POLICY';
      throw new ConfigError([`${where}: unknown worker selection policy type "${name}"`]);
    }
    return new PromptNormalizer({
      mode: config.routerTrackingHash, key: options.trackingKey ?? null, keyId: config.routerTrackingKeyId,
    }, rng);
  }

  // ---- lifecycle of the core --------------------------------------------------------------

  /**
   * After this, mutations and selections fail `selection service is shutting down` and queued
   * selections fail at once; delete still works. Takes effect before it returns (the promise is
   * for hosts that also close sockets).
   */
  shutdown(): Promise<void> {
    if (!this.closing) {
      this.closing = true;
      for (const p of this.partitions.values()) {
        for (const w of p.queue.payloads()) { p.queue.remove(w); w.fail(subscriberShutdown()); }
      }
    }
    return Promise.resolve();
  }

  /**
   * Runs due periodic work: the queue recheck (every 60 s with queueing), approximate-index
   * expiry, the session reaper (every min(ttl, 30 s)), and the expiry sweep every 60 s, which
   * frees bookings older than `DYN_ROUTER_ACTIVE_REQUEST_EXPIRY_SECS` (local: nothing is
   * published) and drops reservation rows whose booking vanished.
   */
  maintain(): void {
    const now = this.clock.now();
    if (this.queueing && now - this.lastRecheck >= LIMITS.queueRecheckSecs * MS) {
      this.lastRecheck = now;
      for (const p of this.partitions.values()) this.sched.drain(p);
    }
    for (const p of this.partitions.values()) { p.approx?.expire(); p.predicted?.expire(); }
    if (this.affinity && now - this.lastReap >= Math.min(this.affinity.ttlSecs, LIMITS.affinityReapMaxSecs) * MS) {
      this.lastReap = now;
      for (const p of this.partitions.values()) p.affinity?.reap();
    }
    if (now - this.lastSweep < LIMITS.expirySweepSecs * MS) return;
    this.lastSweep = now;
    this.sweepExpired();
  }

  /** The expiry sweep itself (also callable directly). Returns the freed reservation ids. */
  sweepExpired(): string[] {
    const freed: string[] = [];
    for (const p of this.partitions.values()) for (const id of p.loads.expire()) freed.push(id);
    const expired: ReservationEnd = { kind: 'expired', afterSecs: this.config.activeRequestExpirySecs };
    for (const id of freed) this.removeRow(id, expired);
    const swept = this.reservations.sweep((id, row) => this.partitions.get(row.partitionKey)?.loads.has(id) === true);
    for (const { row } of swept) this.releaseLease(row);
    if (freed.length > 0) for (const p of this.partitions.values()) this.sched.drain(p);
    return freed;
  }

  // ---- selection ----------------------------------------------------------------------------

  /** Query-only selection: books nothing; caches the booking inputs under a selection_id; advisory adds worker load. */
  select(input: unknown, opts: SelectOptions = {}): Promise<SelectResponse> {
    return this.observed('select', input, () => this.selectOnly(input, opts));
  }

  /** Claims the id, holds the session, schedules, commits the binding and books, atomically. */
  selectAndReserve(input: unknown, opts: SelectOptions = {}): Promise<SelectResponse> {
    return this.observed('select_and_reserve', input, async (obs) => {
      const res = await this.selectAndBook(input, opts);
      obs.booked = { workerId: res.worker_id, dpRank: res.dp_rank, deviceOverlapTokens: res.overlap.gpu, islTokens: res.isl_tokens ?? 0 };
      return res;
    });
  }

  private async selectOnly(input: unknown, opts: SelectOptions): Promise<SelectResponse> {
    const { req, part, eff, prompt } = this.open(this.parse(SelectRequestSchema, input), input);
    const finish = (choice: Choice): SelectResponse => {
      if (req.selection_id !== undefined) {
        this.pending.insert(req.model_name, req.routing_group, req.selection_id, {
          workerId: choice.entry.req.worker_id, dpRank: choice.dpRank,
          sequenceHashes: prompt.seq, blockHashes: prompt.locals,
          islTokens: prompt.isl, effectivePrefillTokens: choice.effectivePrefillTokens, deviceOverlapTokens: choice.overlap.gpu,
          expectedOutputTokens: req.expected_output_tokens, trackPrefillTokens: eff.trackPrefillTokens,
          loraName: req.lora_name, sessionId: req.session_context?.session_id ?? req.session_id,
        });
      }
      const res = this.sched.response(choice, req.selection_id);
      if (req.advisory) {
        const w = choice.entry.req;
        const cap = w.max_num_batched_tokens ?? DEFAULT_PREFILL_TOKEN_CAPACITY;
        const load: WorkerLoad = { active_prefill_tokens: choice.activePrefillTokens, prefill_token_capacity: cap };
        if (w.total_kv_blocks !== undefined) load.total_kv_blocks = w.total_kv_blocks;
        const t = this.config.conditionalDisaggPrefillBusyThreshold;
        if (t !== null) load.prefill_busy = choice.activePrefillTokens > t * cap;
        res.worker_load = load;
      }
      return res;
    };
    // query-only: a live binding steers, none is created
    const sid = this.booker.steerableSession(part, req);
    const bound = sid === undefined ? undefined : part.affinity?.query(sid);
    const steer = bound && part.targetLive(bound) ? bound : undefined;
    if (req.advisory) return finish(this.sched.schedule(part, req, prompt, eff, undefined, steer));
    return this.sched.admit(part, req, prompt, eff, opts, steer, (cache) => finish(this.sched.schedule(part, req, prompt, eff, cache, steer)), () => {});
  }

  private async selectAndBook(input: unknown, opts: SelectOptions): Promise<SelectResponse> {
    const { req, part, eff, prompt } = this.open(this.parse(SelectAndReserveRequestSchema, input), input);
    const id = req.selection_id ?? this.booker.uuid();
    const claim = this.claim(id, part.key);
    let hold: Hold | null;
    try {
      hold = await this.booker.holdSession(part, this.booker.steerableSession(part, req));
    } catch (err) {
      this.reservations.release(claim);
      throw err;
    }
    const steer = hold?.kind === 'bound' ? hold.target : undefined;
    const drop = (): void => {
      if (hold) part.affinity?.abandon(hold);
      this.reservations.release(claim);
    };
    const run = (cache?: OverlapCache): SelectResponse => {
      try {
        const choice = this.sched.schedule(part, req, prompt, eff, cache, steer);
        const lease = this.booker.commitSession(part, hold, choice.entry.req.worker_id, choice.dpRank);
        hold = null;
        this.bookWithLease(choice, id, lease, eff.trackPrefillTokens, choice.effectivePrefillTokens, req.expected_output_tokens, req.lora_name);
        this.reservations.commit(claim, choice.entry.req.worker_id, choice.dpRank, lease);
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

  // ---- reservations and their lifecycle -----------------------------------------------------

  /**
   * Books a selection: the replay form (only `selection_id`) books exactly what a cached
   * `/select` captured; the explicit form (with `worker_id`) discards any cached entry and books
   * a schedulable rank strictly.
   */
  createReservation(input: unknown): Promise<ReservationResponse> {
    return this.observed('reservations', input, (obs) => this.reserve(input, obs));
  }

  private async reserve(input: unknown, obs: Observation): Promise<ReservationResponse> {
    const req = this.parse(ReservationRequestSchema, input);
    const { model_name: model, routing_group: group, selection_id: id } = req;
    if (req.worker_id === undefined) return this.replayReservation(model, group, id, input, obs);

    this.pending.discard(model, group, id);
    const { part, eff, prompt } = this.open(req, input, false);
    if (req.effective_prefill_tokens !== undefined && req.effective_prefill_tokens > prompt.isl) {
      throw effectivePrefillExceedsIsl(req.effective_prefill_tokens, prompt.isl);
    }
    const dpRank = req.dp_rank ?? 0;
    const entry = part.isSchedulable(req.worker_id, dpRank);
    if (!entry) throw schedulableWorkerNotFound(req.worker_id, model, group);
    const track = req.track_prefill_tokens ?? (req.effective_prefill_tokens !== undefined ? true : eff.trackPrefillTokens);
    const claim = this.claim(id, part.key);
    try {
      // without a client value: the booked rank's own cache credit (only its overlap row is needed)
      const effective = req.effective_prefill_tokens ?? effectivePrefillTokens(prompt.isl,
        this.sched.overlapByKey(part, prompt, eff).get(`${req.worker_id}:${dpRank}`)?.cachedTokens ?? 0);
      this.booker.book(this.booker.fixedChoice(part, entry, dpRank, prompt), id, track, effective, req.expected_output_tokens, req.lora_name);
      this.reservations.commit(claim, req.worker_id, dpRank);
    } catch (err) {
      this.reservations.release(claim);
      throw err;
    }
    return { selection_id: id, model_name: model, routing_group: group, worker_id: req.worker_id, dp_rank: dpRank, endpoint: entry.req.endpoint ?? '' };
  }

  /** Replay form: book only the cached inputs; failures keep the entry. */
  private async replayReservation(model: string, group: string, id: string, input: unknown, obs: Observation): Promise<ReservationResponse> {
    const hit = this.pending.peek(model, group, id);
    if (!hit) throw pendingNotFound(id, model, group);
    const v = hit.value;
    const part = this.readyPartition(model, group, input);
    const entry = part.isSchedulable(v.workerId, v.dpRank);
    if (!entry) throw schedulableWorkerNotFound(v.workerId, model, group, v.dpRank);
    const claim = this.claim(id, part.key);
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
        // an affinity rejection consumes the cached selection
        this.pending.removeIfGeneration(model, group, id, hit.generation);
        throw err;
      }
      hold = null;
      const seq = v.sequenceHashes;
      const prompt: NormalizedPrompt = {
        isl: v.islTokens, nBlocks: seq.length, locals: v.blockHashes, seq,
        seqWords: new Uint32Array(seq.buffer, seq.byteOffset, seq.length * 2), loraName: v.loraName, fromHashes: true,
      };
      this.bookWithLease(this.booker.fixedChoice(part, entry, v.dpRank, prompt), id, lease,
        v.trackPrefillTokens, v.effectivePrefillTokens, v.expectedOutputTokens, v.loraName);
      this.reservations.commit(claim, v.workerId, v.dpRank, lease);
    } catch (err) {
      if (hold) part.affinity?.abandon(hold);
      this.reservations.release(claim);
      throw err;
    }
    this.pending.removeIfGeneration(model, group, id, hit.generation);
    if (v.deviceOverlapTokens !== undefined) {
      obs.booked = { workerId: v.workerId, dpRank: v.dpRank, deviceOverlapTokens: v.deviceOverlapTokens, islTokens: v.islTokens };
    }
    return { selection_id: id, model_name: model, routing_group: group, worker_id: v.workerId, dp_rank: v.dpRank, endpoint: entry.req.endpoint ?? '' };
  }

  /** Prefill finished (idempotent; published again on every call). */
  prefillComplete(reservationId: string): StatusOk {
    this.live();
    const b = this.booking(reservationId);
    this.expectBlocks(b.part, b.workerId, b.dpRank, b.part.loads.prefillComplete(reservationId));
    this.publishLifecycle(b, reservationId, 'prefill_complete');
    this.sched.drain(b.part);
    return { status: 'ok' };
  }

  /** One more output block (local only: never published). */
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

  /** Frees a booking (published to replica peers); an id with no booking here is a 404, and still reported to `onUnknownFree`. */
  freeReservation(reservationId: string): StatusOk {
    this.live();
    if (this.reservations.state(reservationId) === undefined) this.hooks.onUnknownFree?.(reservationId);
    const b = this.booking(reservationId);
    b.part.loads.free(reservationId);
    this.removeRow(reservationId, FREED);
    this.publishLifecycle(b, reservationId, 'free');
    this.sched.drain(b.part);
    return { status: 'ok' };
  }

  // ---- inspection ---------------------------------------------------------------------------

  /** Current load per partition and schedulable rank, with the queue counters. */
  loads(filter: FilterQuery | unknown = {}): ModelLoadResponse[] {
    this.maintain();
    const f = parseBody(FilterQuerySchema, filter);
    const parts = [...this.partitions.values()]
      .filter((p) => (f.model_name === undefined || p.modelName === f.model_name) && (f.routing_group === undefined || p.routingGroup === f.routing_group))
      .sort((a, b) => (a.modelName !== b.modelName ? (a.modelName < b.modelName ? -1 : 1) : a.routingGroup < b.routingGroup ? -1 : a.routingGroup > b.routingGroup ? 1 : 0));
    return parts.map((p) => {
      const q = p.queue.pending();
      return {
        model_name: p.modelName, routing_group: p.routingGroup,
        loads: p.schedulableRanks().map(({ entry, dpRank, key }): PotentialLoad => {
          const l = p.loads.loadOf(key);
          return {
            worker_id: entry.req.worker_id, dp_rank: dpRank, potential_prefill_tokens: l.activePrefillTokens,
            potential_decode_blocks: l.activeDecodeBlocks, active_requests: l.activeRequests,
          };
        }),
        pending_count: q.count, pending_isl_tokens: q.islTokens,
      };
    });
  }

  /** The load of every schedulable rank if this prompt were added to it. */
  potentialLoads(input: unknown): PotentialLoad[] {
    const { part, prompt, eff } = this.open(this.parse(PromptQuerySchema, input) as PromptRequest, input);
    const untracked = untrackedBlocks(prompt.isl, part.blockSize, prompt.nBlocks);
    return this.sched.candidates(part, prompt, eff).map((c) => ({
      worker_id: c.workerId, dp_rank: c.dpRank,
      potential_prefill_tokens: c.activePrefillTokens + (eff.trackPrefillTokens ? effectivePrefillTokens(prompt.isl, c.cachedTokens) : 0),
      potential_decode_blocks: c.potentialDecodeBlocks + untracked,
      active_requests: c.activeRequests,
    }));
  }

  /** The prompt's tiered overlap on every schedulable rank (the predicted side index merged in, as for selection). */
  overlapScores(input: unknown): OverlapScoresResponse {
    const { part, prompt, eff } = this.open(this.parse(PromptQuerySchema, input) as PromptRequest, input);
    const rows = overlapScoreRows(this.sched.overlapByKey(part, prompt, eff), part.schedulableRanks());
    return {
      block_size: part.blockSize, num_blocks: prompt.nBlocks, workers: rows,
      shared_cache: { enabled: false, total_hit_blocks: 0, ranges: [], error: null },
    };
  }

  /** The index as RouterEvents per `"model:group"` (the recovery format). */
  dump(): DumpResponse {
    const out: DumpResponse = {};
    const parts = [...this.partitions.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    for (const p of parts) {
      try {
        out[`${p.modelName}:${p.routingGroup}`] = { block_size: p.blockSize, events: p.index.dumpEvents() };
      } catch (err) {
        out[`${p.modelName}:${p.routingGroup}`] = { error: err instanceof Error ? err.message : String(err) };
      }
    }
    return out;
  }

  /**
   * Load a dump: each `"model:group"` key split at the first ':' gets its partition (created
   * with the dump's block size when new) and its events applied. Returns events applied. A dump
   * with a malformed key, or with more new partitions than `--max-partitions` leaves room for,
   * throws before anything is loaded.
   */
  loadDump(dump: Readonly<Record<string, { block_size: number; events: readonly RouterEvent[] }>>): number {
    const keys = Object.keys(dump).map((key) => {
      const at = key.indexOf(':');
      if (at < 0) throw new Error(`malformed dump key "${key}"`);
      return { key, model: key.slice(0, at), group: key.slice(at + 1) };
    });
    const fresh = keys.filter((k) => !this.partitions.has(partitionKeyOf(k.model, k.group))).length;
    if (this.partitions.size + fresh > this.limits.maxPartitions) {
      throw new Error(`the dump has ${fresh} new partitions; --max-partitions ${this.limits.maxPartitions} leaves room for `
        + `${Math.max(0, this.limits.maxPartitions - this.partitions.size)}`);
    }
    let n = 0;
    for (const { key, model, group } of keys) {
      const v = dump[key];
      const part = this.partitions.get(partitionKeyOf(model, group)) ?? this.ensurePartition(model, group, v.block_size, false);
      n += part.index.loadEvents(v.events);
    }
    return n;
  }

  // ---- replica peers ------------------------------------------------------------------------

  /**
   * Applies a lifecycle event from a replica peer. Dropped (false): unknown partition, block-size
   * mismatch, a worker rank not registered (schedulable) here, an id claimed in flight here or
   * booked in another partition. A peer admission replaces a stale row of the same partition;
   * mirrored bookings are indexed, so lifecycle calls here resolve them. Nothing is re-published.
   */
  applyReplicaEvent(e: LifecycleEvent): boolean { return this.replicaEventOutcome(e) === 'applied'; }

  /**
   * {@link applyReplicaEvent}, saying why an event was dropped. `owner` is the `router_id` of the
   * replica that admitted the booking (an admission's publisher, or the owner a repair names).
   */
  replicaEventOutcome(e: LifecycleEvent, owner?: bigint): ReplicaEventOutcome {
    const part = this.partitions.get(partitionKeyOf(e.modelName, e.routingGroup));
    if (!part) return 'unknown_partition';
    if (part.blockSize !== e.blockSize) return 'block_size_mismatch';
    const id = e.requestId;
    if (e.kind === 'add') {
      if (!part.isSchedulable(e.workerId, e.dpRank)) return 'unknown_worker';
      const st = this.reservations.state(id);
      if (st && (st.kind === 'claim' || st.partitionKey !== part.key)) return 'id_conflict';
      if (!st && this.reservations.size() >= this.limits.maxBookings) { this.limitRejections.bookings++; return 'booking_limit'; }
      if (part.loads.has(id)) part.loads.free(id);
      const seq = e.seq ?? new BigUint64Array(0);
      const ok = part.loads.book(id, e.workerId, e.dpRank, {
        seq: new Uint32Array(seq.buffer, seq.byteOffset, seq.length * 2), nBlocks: seq.length,
        trackPrefillTokens: e.trackPrefillTokens, prefillTokens: e.prefillTokens,
        expectedOutputTokens: e.expectedOutputTokens ?? undefined, islTokens: 0, loraName: e.loraName ?? undefined,
        admittedAt: e.ageMs === undefined ? undefined : this.clock.now() - e.ageMs,
      });
      if (!ok) return 'unknown_worker';
      const prev = this.reservations.lookup(id);
      if (prev) this.releaseLease(prev);
      this.reservations.mirror(id, part.key, e.workerId, e.dpRank, owner);
      return 'applied';
    }
    const row = this.reservations.lookup(id);
    if (!row || row.partitionKey !== part.key || !part.loads.has(id)) return 'unknown_booking';
    if (e.kind === 'prefill_complete') this.expectBlocks(part, row.workerId, row.dpRank, part.loads.prefillComplete(id));
    else {
      part.loads.free(id);
      this.removeRow(id, FREED_BY_PEER);
    }
    this.sched.drain(part);
    return 'applied';
  }

  /**
   * Applies a peer's session binding. Dropped (false) when affinity is off, the partition is
   * unknown, the event is this replica's own, or the target worker is not in this partition.
   */
  applyAffinityEvent(e: AffinityEvent): boolean {
    if (e.writerId === this.replicaId) return false;
    const part = this.partitions.get(partitionKeyOf(e.modelName, e.routingGroup));
    if (!part?.affinity || !part.workers.has(e.workerId)) return false;
    const r = part.affinity.applyRemote(e.sessionId, { workerId: e.workerId, dpRank: e.dpRank },
      { sequence: e.sequence, writerId: e.writerId });
    return r === 'inserted' || r === 'refreshed' || r === 'replaced_expired' || r === 'replaced_newer';
  }

  // ---- the steps operations share -----------------------------------------------------------

  protected dropBookings(part: Partition, workerId: bigint, dpRank: number, change: WorkerChange): void {
    const end: ReservationEnd = { kind: 'worker', workerId, dpRank, change };
    for (const id of part.loads.removeRank(workerId, dpRank)) this.removeRow(id, end);
    for (const id of this.reservations.idsOfWorker(workerId, dpRank)) {
      const row = this.reservations.lookup(id);
      if (row && row.partitionKey === part.key) this.removeRow(id, end);
    }
  }

  protected drain(part: Partition): void { this.sched.drain(part); }

  /**
   * Runs a selection operation and reports it to `hooks.onSelection` (route, partition, outcome,
   * duration, and what `obs` says about the booking); without the hook it only runs it.
   */
  private async observed<T extends { model_name: string; routing_group: string }>(route: SelectionRoute, input: unknown,
    op: (obs: Observation) => Promise<T>): Promise<T> {
    const hook = this.hooks.onSelection;
    const obs: Observation = {};
    if (!hook) return op(obs);
    const t0 = performance.now();
    try {
      const res = await op(obs);
      hook({ route, modelName: res.model_name, routingGroup: res.routing_group, outcome: 'ok', seconds: (performance.now() - t0) / 1000, booked: obs.booked });
      return res;
    } catch (err) {
      const [modelName, routingGroup] = this.partitionNamed(input);
      const outcome = err instanceof SelectionError && (err.status === 429 || err.status === 503) ? 'rejected' : 'error';
      hook({ route, modelName, routingGroup, outcome, seconds: (performance.now() - t0) / 1000 });
      throw err;
    }
  }

  /** `[model_name, routing_group]` of a request body when that partition exists, else `['', '']`. */
  private partitionNamed(input: unknown): [string, string] {
    if (typeof input === 'object' && input !== null) {
      const { model_name: model, routing_group } = input as Record<string, unknown>;
      const group = routing_group ?? 'default';
      if (typeof model === 'string' && typeof group === 'string' && this.partitions.has(partitionKeyOf(model, group))) return [model, group];
    }
    return ['', ''];
  }

  /**
   * The opening steps of every prompt request: the prompt fields' 400s, the ready partition (or
   * the 503, which reads the raw `input` to say what was given), the request's router override,
   * and the normalised prompt.
   */
  private open<R extends PromptRequest>(req: R, input: unknown, requireBlockHashes = true): Opened<R> {
    checkPromptFields(req, requireBlockHashes);
    const part = this.readyPartition(req.model_name, req.routing_group, input);
    this.checkPromptSize(req, part.blockSize);
    const eff = applyOverride(this.config, req.router_config_override);
    return { req, part, eff, prompt: this.normalizer.normalize(req, part, eff.assumeKvReuse) };
  }

  /**
   * 422 for a prompt of more blocks than `--max-prompt-blocks` (its complete blocks of token ids,
   * or the length of its hash lists), before any hashing: the bound on one request's work.
   */
  private checkPromptSize(req: PromptFields, blockSize: number): void {
    const routing = req.mm_routing_info?.routing_token_ids;
    const [field, blocks] = routing !== undefined && routing.length > 0 ? ['mm_routing_info.routing_token_ids', Math.floor(routing.length / blockSize)]
      : req.token_ids !== undefined ? ['token_ids', Math.floor(req.token_ids.length / blockSize)]
      : ['sequence_hashes', req.sequence_hashes?.length ?? 0];
    const max = this.limits.maxPromptBlocks;
    if (blocks <= max) return;
    this.limitRejections.promptBlocks++;
    throw new SelectionError('SEL_UNPROCESSABLE', `Failed to deserialize the JSON body into the target type: ${field}: `
      + `${blocks} blocks of ${blockSize} tokens is over the limit of ${max} blocks per prompt (--max-prompt-blocks)`);
  }

  /** Claims a booking id: a 429 when live bookings are at `--max-bookings` (a duplicate id stays a 409). */
  private claim(id: string, partitionKey: string): ClaimToken {
    const live = this.reservations.size();
    if (live >= this.limits.maxBookings && this.reservations.state(id) === undefined) {
      this.limitRejections.bookings++;
      throw bookingLimit(live, this.limits.maxBookings);
    }
    return this.reservations.claim(id, partitionKey);
  }

  /** Books a choice whose session lease is already committed; a failed booking releases the lease. */
  private bookWithLease(choice: Choice, id: string, lease: AffinityLease | undefined, track: boolean, prefillTokens: number,
    expectedOutputTokens: number | undefined, loraName: string | undefined): void {
    try {
      this.booker.book(choice, id, track, prefillTokens, expectedOutputTokens, loraName);
    } catch (err) {
      if (lease) choice.part.affinity?.release(lease);
      throw err;
    }
  }

  /** The live booking of a reservation id, or 404. */
  private booking(id: string): { part: Partition; workerId: bigint; dpRank: number } {
    const row = this.reservations.lookup(id);
    const part = row ? this.partitions.get(row.partitionKey) : undefined;
    if (!row || !part || !part.loads.has(id)) throw this.reservations.notFound(id);
    return { part, workerId: row.workerId, dpRank: row.dpRank };
  }

  private publishLifecycle(b: { part: Partition; workerId: bigint; dpRank: number }, requestId: string, kind: 'prefill_complete' | 'free'): void {
    this.hooks.onLifecycle?.({
      modelName: b.part.modelName, routingGroup: b.part.routingGroup, blockSize: b.part.blockSize,
      requestId, workerId: b.workerId, dpRank: b.dpRank, loraName: null, kind,
    });
  }

  /** Removes a reservation row (remembering how it ended) and releases its session lease (the binding starts idling). */
  private removeRow(id: string, end: ReservationEnd): void {
    const row = this.reservations.remove(id, end);
    if (row) this.releaseLease(row);
  }

  private releaseLease(row: { partitionKey: string; lease?: AffinityLease }): void {
    if (row.lease) this.partitions.get(row.partitionKey)?.affinity?.release(row.lease);
  }
}

/**
 * Start-up warnings for router settings Dynamo's standalone selection service does not act on
 * either (README "Where this differs from Dynamo" lists what each would mean elsewhere).
 */
function ignoredSettings(c: RouterConfig): string[] {
  const out: string[] = [];
  const note = (v: string, why: string): void => { out.push(`${v} has no effect on the standalone selector: ${why}`); };
  if (!c.routerTrackActiveBlocks) note('DYN_ROUTER_TRACK_ACTIVE_BLOCKS=false', 'bookings always track their blocks, as Dynamo\'s selection service does');
  if (c.routerActiveSequenceStride !== 1) note('DYN_ROUTER_ACTIVE_SEQUENCE_STRIDE', 'sequence_hashes and replica-sync events keep one tracking hash per block');
  if (c.useRemoteIndexer) note('DYN_USE_REMOTE_INDEXER', 'the index is local (use --indexer-peers to recover it from a peer at start-up)');
  if (c.routerReplicaSync) note('DYN_ROUTER_REPLICA_SYNC', 'replica sync is enabled by --replica-sync-port');
  return out;
}

/**
 * ZmqKvIngress: the service's default {@link IndexFeed} when `use_kv_events` is on (Dynamo `lib/kv-router/src/services/selection/catalog.rs`,
 * `lib/kv-router/src/services/selection/ingress.rs`). One {@link KvListener} per registered worker rank, reconciled rank by rank on
 * every POST/PATCH the core accepts:
 * - a rank whose event endpoint AND replay endpoint are unchanged keeps its listener, its
 *   watermark and its indexed blocks (so a publisher restarted at the same address is not
 *   recovered by a re-POST: its new seqs look stale; DELETE then POST recovers, as the spec says);
 * - a changed rank gets a fresh listener (fresh watermark) and its old blocks are dropped;
 * - a removed rank's listener stops and its blocks are dropped;
 * - an invalid endpoint throws before anything changed: listeners opened by this call are
 *   closed again and the previous ones keep running (the core then marks the worker
 *   `incomplete` and detaches it).
 * `detach` (DELETE, partition move) stops the worker's listeners; the core then removes its blocks.
 *
 * Listeners opened before {@link ZmqKvIngress.setIndexerReady} connect at once but apply
 * nothing until it is called (start-up recovery from peers must land first, Dynamo `lib/kv-router/src/services/indexer/recovery.rs`).
 */
import type { FeedPartition, IndexFeed, KvFeedState, KvFeedStatus } from '../../core/index/feed.js';
import { MS, systemClock, type Clock } from '../../core/random.js';
import { validateZmqEndpoint } from '../zmq-endpoint.js';
import { silentLogger, type Logger } from '../logger.js';
import { KvBatchDecoder } from './decode.js';
import { BatchApplier } from './apply.js';
import { DEFAULT_KV_FEED_SILENCE_SECS, FeedHealth } from './feed-health.js';
import { KvListener } from './listener.js';
import type { TransportState } from './zmtp-subscriber.js';
import { Pacer } from './pacer.js';
import {
  addCounters, copyCounters, droppedBatches, newCounters, shapeMismatches, type IngestCounters, type WorkerIngestStats,
} from './stats.js';

export interface IngressOptions {
  logger?: Logger;
  /** Messages above this size are dropped and counted (default {@link DEFAULT_MAX_MESSAGE_BYTES}). */
  maxMessageBytes?: number;
  /** Ranks this process can follow (one connection each); null or absent: no cap. */
  maxRanks?: number | null;
  /** A replay that gets no reply for this long is abandoned (default 5 s, as Dynamo's bootstrap). */
  replayIdleTimeoutMs?: number;
  /**
   * Busy time the event path may take before yielding to selections (`--kv-events-turn-ms`,
   * default {@link DEFAULT_KV_TURN_MS}, from {@link MIN_KV_TURN_MS} to {@link MAX_KV_TURN_MS}).
   */
  yieldBudgetMs?: number;
  /** The feed-health window (`--kv-feed-silence-secs`, default 30 s). */
  silenceSecs?: number;
  /** The core's clock (booking times reach {@link ZmqKvIngress.expectBlocks} on it). */
  clock?: Clock;
}

/** The default maximum size of one KV-event message (vLLM batches are kilobytes). */
export const DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024;
/** The ingestion turn: its default and bounds, ms (bench/RESULTS.md, KV-event ingestion second pass). */
export const DEFAULT_KV_TURN_MS = 0.25, MIN_KV_TURN_MS = 0.05, MAX_KV_TURN_MS = 100;

interface RankFeed { listener: KvListener; applier: BatchApplier; counters: IngestCounters; health: FeedHealth }
interface WorkerFeed {
  partition: FeedPartition;
  /** Counters of the worker's retired rank listeners (so the worker's totals never go back). */
  retired: IngestCounters;
  ranks: Map<number, RankFeed>;
}

/** One rank's feed at a moment (metrics); `counters` is live, not a copy. */
export interface RankFeedSample {
  workerId: bigint;
  dpRank: number;
  modelName: string;
  routingGroup: string;
  endpoint: string;
  state: KvFeedState;
  /** Seconds since the last batch; null before the first. */
  lastBatchAgeSecs: number | null;
  counters: Readonly<IngestCounters>;
}

export class ZmqKvIngress implements IndexFeed {
  private readonly workers = new Map<bigint, WorkerFeed>();
  private readonly decoder = new KvBatchDecoder();
  private readonly pacer: Pacer;
  private readonly logger: Logger;
  private readonly replayIdleTimeoutMs: number;
  private readonly maxMessageBytes: number;
  private readonly maxRanks: number | null;
  /** Ranks with a listener, across workers. */
  private rankCount = 0;
  private markReady!: () => void;
  private readonly ready = new Promise<void>((resolve) => { this.markReady = resolve; });
  private readonly closing = new Set<Promise<void>>();
  private readonly clock: Clock;
  private readonly windowMs: number;
  private readonly ticker: ReturnType<typeof setInterval>;

  constructor(o: IngressOptions = {}) {
    this.logger = o.logger ?? silentLogger;
    this.replayIdleTimeoutMs = o.replayIdleTimeoutMs ?? 5000;
    this.maxMessageBytes = o.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    this.maxRanks = o.maxRanks ?? null;
    const turn = o.yieldBudgetMs ?? DEFAULT_KV_TURN_MS;
    if (!(turn >= MIN_KV_TURN_MS && turn <= MAX_KV_TURN_MS)) {
      throw new RangeError(`the KV-event ingestion turn must be between ${MIN_KV_TURN_MS} and ${MAX_KV_TURN_MS} ms (got ${turn})`);
    }
    this.pacer = new Pacer(turn);
    this.clock = o.clock ?? systemClock;
    this.windowMs = (o.silenceSecs ?? DEFAULT_KV_FEED_SILENCE_SECS) * MS;
    // Health warnings come due with time alone (still not connected, silent): check a few times a window.
    this.ticker = setInterval(() => this.checkHealth(), Math.min(1000, Math.max(this.windowMs / 4, 10)));
    this.ticker.unref();
  }

  /** Start-up recovery finished: listeners begin applying (those opened later start at once). */
  setIndexerReady(): void { this.markReady(); }

  reconcile(partition: FeedPartition, workerId: bigint, ranks: ReadonlyMap<number, string>, replayEndpoint: string | null): void {
    const wanted = [...ranks].sort((a, b) => a[0] - b[0]);
    for (const [rank, endpoint] of wanted) {
      const reason = validateZmqEndpoint(endpoint);
      if (reason !== null) throw new Error(`invalid kv_events endpoint for worker ${workerId} dp_rank ${rank}: ${reason}`);
    }
    if (replayEndpoint !== null) {
      const reason = validateZmqEndpoint(replayEndpoint);
      if (reason !== null) throw new Error(`invalid replay endpoint for worker ${workerId}: ${reason}`);
    }
    let prev = this.workers.get(workerId);
    if (this.maxRanks !== null) {
      const fresh = wanted.filter(([rank, endpoint]) => {
        const old = prev?.ranks.get(rank)?.listener;
        return !old || old.endpoint !== endpoint || old.replayEndpoint !== replayEndpoint;
      }).length;
      const after = this.rankCount - (prev?.ranks.size ?? 0) + wanted.length;
      if (fresh > 0 && after > this.maxRanks) {
        throw new Error(`KV-event rank limit reached: this process follows at most ${this.maxRanks} ranks (one connection each, `
          + `under its open-file limit; raise \`ulimit -n\` or spread workers over more replicas)`);
      }
    }
    if (prev && prev.partition.index !== partition.index) { this.detach(workerId); prev = undefined; }
    const retired = prev?.retired ?? newCounters();
    const next = new Map<number, RankFeed>(), opened: RankFeed[] = [];
    for (const [rank, endpoint] of wanted) {
      const old = prev?.ranks.get(rank);
      if (old && old.listener.endpoint === endpoint && old.listener.replayEndpoint === replayEndpoint) { next.set(rank, old); continue; }
      try {
        const feed = this.open(partition, workerId, rank, endpoint, replayEndpoint);
        opened.push(feed);
        next.set(rank, feed);
      } catch (err) {
        for (const f of opened) this.track(f.listener.close());
        throw new Error(`invalid kv_events endpoint for worker ${workerId} dp_rank ${rank}: ${(err as Error).message}`);
      }
    }
    // Commit: retire changed and removed ranks (their blocks go), then start the new listeners.
    if (prev) {
      const kept = new Set<number>();
      for (const [rank, f] of next) if (prev.ranks.get(rank) === f) kept.add(rank);
      for (const [rank, f] of prev.ranks) {
        if (kept.has(rank)) continue;
        this.retire(partition, workerId, rank, f, kept);
        addCounters(retired, f.counters);
      }
    }
    this.rankCount += next.size - (prev?.ranks.size ?? 0);
    this.workers.set(workerId, { partition, retired, ranks: next });
    for (const f of opened) f.listener.start();
    if (opened.length > 0) {
      this.logger.info({ workerId: String(workerId), ranks: opened.map((f) => f.listener.dpRank) }, 'KV event listeners started');
    }
  }

  detach(workerId: bigint): void {
    const w = this.workers.get(workerId);
    if (!w) return;
    this.workers.delete(workerId);
    this.rankCount -= w.ranks.size;
    for (const f of w.ranks.values()) this.track(f.listener.close());
    this.logger.info({ workerId: String(workerId) }, 'KV event listeners stopped');
  }

  /**
   * Counters and listener state of one worker (null when it has no listeners), or of every
   * worker (sorted by id). Snapshots: later events do not change a returned object.
   */
  stats(): WorkerIngestStats[];
  stats(workerId: bigint): WorkerIngestStats | null;
  stats(workerId?: bigint): WorkerIngestStats[] | WorkerIngestStats | null {
    const now = this.clock.now();
    const one = (id: bigint, w: WorkerFeed): WorkerIngestStats => {
      const total = copyCounters(w.retired);
      for (const f of w.ranks.values()) addCounters(total, f.counters);
      return {
        workerId: id,
        ranks: [...w.ranks.values()].map((f) => ({
          dpRank: f.listener.dpRank, endpoint: f.listener.endpoint, replayEndpoint: f.listener.replayEndpoint,
          watermark: f.listener.watermark, transport: f.listener.transport, transportError: f.listener.transportError,
          state: f.health.state(now, f.applier.lastBatchAt), counters: copyCounters(f.counters),
        })),
        counters: total,
      };
    };
    if (workerId !== undefined) {
      const w = this.workers.get(workerId);
      return w ? one(workerId, w) : null;
    }
    return [...this.workers].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map(([id, w]) => one(id, w));
  }

  /** The worker's feeds, sorted by rank (worker records' `kv_events`); [] without listeners. */
  describe(workerId: bigint): KvFeedStatus[] {
    const w = this.workers.get(workerId);
    if (!w) return [];
    const now = this.clock.now();
    return [...w.ranks.values()].sort((a, b) => a.listener.dpRank - b.listener.dpRank).map((f) => {
      const c = f.counters, last = f.applier.lastBatchAt;
      const st: KvFeedStatus = {
        dp_rank: f.listener.dpRank, endpoint: f.listener.endpoint, state: f.health.state(now, last),
        last_event_age_secs: last === null ? null : Math.max(0, now - last) / MS,
        batches: c.batchesApplied, blocks_stored: c.blocksStored, blocks_removed: c.blocksRemoved,
        dropped: droppedBatches(c), gaps: c.gaps, block_size_mismatches: shapeMismatches(c),
      };
      const reason = f.health.failure;
      if (reason !== null) st.reason = reason;
      return st;
    });
  }

  /** A booking on the rank, made at `bookedAt` (the core's clock), completed prefill with uncached blocks. */
  expectBlocks(workerId: bigint, dpRank: number, _blocks: number, bookedAt: number): void {
    const f = this.workers.get(workerId)?.ranks.get(dpRank);
    f?.health.expect(this.clock.now(), bookedAt, f.applier.lastBatchAt);
  }

  /** Every rank's feed now, for metrics (sorted by worker, then rank). */
  samples(): RankFeedSample[] {
    const now = this.clock.now();
    const out: RankFeedSample[] = [];
    for (const [workerId, w] of this.workers) {
      for (const f of w.ranks.values()) {
        const last = f.applier.lastBatchAt;
        out.push({
          workerId, dpRank: f.listener.dpRank, modelName: w.partition.modelName, routingGroup: w.partition.routingGroup,
          endpoint: f.listener.endpoint, state: f.health.state(now, last),
          lastBatchAgeSecs: last === null ? null : Math.max(0, now - last) / MS, counters: f.counters,
        });
      }
    }
    return out.sort((a, b) => (a.workerId < b.workerId ? -1 : a.workerId > b.workerId ? 1 : a.dpRank - b.dpRank));
  }

  /** Stops every listener (sockets closed, ports released); indexed blocks stay. */
  async close(): Promise<void> {
    clearInterval(this.ticker);
    for (const w of this.workers.values()) for (const f of w.ranks.values()) this.track(f.listener.close());
    this.workers.clear();
    this.rankCount = 0;
    await Promise.all([...this.closing]);
  }

  private open(partition: FeedPartition, workerId: bigint, dpRank: number, endpoint: string, replayEndpoint: string | null): RankFeed {
    const counters = newCounters();
    const applier = new BatchApplier({ index: partition.index, blockSize: partition.blockSize, workerId }, counters, this.clock);
    const health = new FeedHealth(this.windowMs, this.clock.now());
    const feed = { applier, counters, health } as RankFeed;
    feed.listener = new KvListener({
      workerId, dpRank, endpoint, replayEndpoint, counters, applier, decoder: this.decoder, pacer: this.pacer,
      ready: this.ready, replayIdleTimeoutMs: this.replayIdleTimeoutMs, maxMessageBytes: this.maxMessageBytes, logger: this.logger,
      // the worker's ranks as of now (a kept listener sees later reconciles)
      ownsRank: (rank) => this.workers.get(workerId)?.ranks.has(rank) === true,
      onTransport: (state, reason) => this.onTransport(workerId, feed, state, reason),
    });
    return feed;
  }

  /** A transport report of a rank's subscriber: recorded, and logged at once when it is a failure. */
  private onTransport(workerId: bigint, f: RankFeed, state: TransportState, reason: string | null): void {
    if (f.listener.closed) return;
    f.health.setTransport(state, this.clock.now(), reason ?? undefined);
    this.checkRank(workerId, f);
  }

  /** Writes the health lines due for every rank (the ticker). */
  private checkHealth(): void {
    for (const [workerId, w] of this.workers) for (const f of w.ranks.values()) this.checkRank(workerId, f);
  }

  private checkRank(workerId: bigint, f: RankFeed): void {
    for (const n of f.health.evaluate(this.clock.now(), f.applier.lastBatchAt, shapeMismatches(f.counters))) {
      const fields: Record<string, unknown> = {
        workerId: String(workerId), dpRank: f.listener.dpRank, endpoint: f.listener.endpoint, state: n.state,
      };
      if (n.reason !== undefined) fields.reason = n.reason;
      if (n.forSecs !== undefined) fields.forSecs = n.forSecs;
      if (n.level === 'warn') this.logger.warn(fields, n.msg); else this.logger.info(fields, n.msg);
    }
  }

  /** Stop a rank's listener and drop what it indexed (ranks kept by another listener stay). */
  private retire(partition: FeedPartition, workerId: bigint, rank: number, f: RankFeed, kept: ReadonlySet<number>): void {
    this.track(f.listener.close());
    const drop = new Set([rank, ...f.applier.ranks]);
    for (const r of drop) if (!kept.has(r)) partition.index.removeRank(workerId, r);
  }

  /** Keep a closing listener's promise until it settles, so close() can wait for all of them. */
  private track(p: Promise<void>): void {
    const t = p.catch(() => {}).finally(() => this.closing.delete(t));
    this.closing.add(t);
  }
}

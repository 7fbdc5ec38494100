/**
 * Prometheus metrics of one service (`GET /metrics`), with prom-client. Each service has its own
 * {@link Registry}, so two services in one process never mix their series; the process-level
 * default metrics (CPU, memory, event-loop lag, GC) describe the process, not a service, and
 * live in one process-wide registry created on first use (prom-client's collectors install
 * observers that are never removed: one set per process, not one per service).
 *
 * Where the numbers come from, so the hot paths pay nothing or next to nothing:
 * - selections: {@link ServiceMetrics.onSelection}, the core's `onSelection` hook (a counter,
 *   a histogram observation and, for bookings of the router's choice, the overlap ratio);
 * - everything else is read at scrape time by `collect` callbacks: the KV-event counters the
 *   ingress already keeps per rank (plain numbers bumped per batch or per event), the feed
 *   states, the index's holdings per tier, wasm memory, bookings, queues, the pending-selection
 *   cache and the replica-sync counters. Series are rebuilt on each scrape, so a removed worker's
 *   series are gone from the next one.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { KV_FEED_STATES } from '../core/index/feed.js';
import type { Tier } from '../core/index/index-types.js';
import type { Partition } from '../core/catalog/partition.js';
import type { SelectionEvent } from '../core/options.js';
import type { MetricsExposition } from '../core/wire/types.js';
import type { Wasm } from '../core/index/wasm.js';
import { feedUp } from './kv-events/feed-health.js';
import type { RankFeedSample } from './kv-events/ingress.js';
import { droppedBatches, shapeMismatches } from './kv-events/stats.js';
import type { ReplicaStats } from './replica-sync.js';

/** What the metrics read at scrape time. */
export interface MetricsSource {
  partitionList(): Partition[];
  /** Entries in the pending-selection cache. */
  pendingSelections(): number;
  /** The wasm instances whose linear memory counts (the shared module, and any partition's own). */
  wasmInstances(): Iterable<Wasm>;
  /** Every rank feed (empty without the KV-event ingress). */
  feedSamples(): RankFeedSample[];
  replicaStats(): ReplicaStats | null;
}


/** Selection duration buckets: 10 µs to 1 s. */
export const DURATION_BUCKETS = [1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];
/** Overlap-ratio buckets: exact misses (0) apart, then tenths, then the near-complete hits. */
export const RATIO_BUCKETS = [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1];

/** `tier` label values, by Tier (device, host_pinned in /dump, disk, external). */
const TIERS = ['device', 'host', 'disk', 'external'] as const;
const RANK_LABELS = ['model_name', 'routing_group', 'worker_id', 'dp_rank'] as const;
const PART_LABELS = ['model_name', 'routing_group'] as const;

let processRegistry: Registry | null = null;

/** The process-wide registry of prom-client's default metrics (created once). */
function processMetrics(): Registry {
  if (processRegistry === null) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

const rankLabels = (f: RankFeedSample) =>
  ({ model_name: f.modelName, routing_group: f.routingGroup, worker_id: f.workerId.toString(), dp_rank: String(f.dpRank) });
const partLabels = (p: Partition) => ({ model_name: p.modelName, routing_group: p.routingGroup });

export class ServiceMetrics {
  /** This service's own registry (its families only; {@link ServiceMetrics.scrape} adds the process metrics). */
  readonly registry = new Registry();
  private readonly selections: Counter<'model_name' | 'routing_group' | 'route' | 'outcome'>;
  private readonly duration: Histogram<'route'>;
  private readonly overlap: Histogram<'model_name' | 'routing_group'>;

  constructor(src: MetricsSource, private readonly includeProcess = true) {
    const registers = [this.registry];
    const feeds = (fn: (f: RankFeedSample) => void) => { for (const f of src.feedSamples()) fn(f); };
    const parts = (fn: (p: Partition) => void) => { for (const p of src.partitionList()) fn(p); };

    // one series per rank feed, whose value is read from its sample
    const rankGauge = (name: string, help: string, value: (f: RankFeedSample) => number) => new Gauge({
      name, help, labelNames: RANK_LABELS, registers, collect() { this.reset(); feeds((f) => this.set(rankLabels(f), value(f))); },
    });
    const rankCounter = (name: string, help: string, value: (f: RankFeedSample) => number) => new Counter({
      name, help, labelNames: RANK_LABELS, registers, collect() { this.reset(); feeds((f) => this.inc(rankLabels(f), value(f))); },
    });
    rankGauge('select_service_kv_feed_up', 'Whether the rank\'s KV-event feed is connected or live (1) or not (0)', (f) => (feedUp(f.state) ? 1 : 0));
    new Gauge({
      name: 'select_service_kv_feed_state', help: 'The rank\'s KV-event feed state: 1 for the current state, 0 for the others',
      labelNames: [...RANK_LABELS, 'state'], registers,
      collect() {
        this.reset();
        feeds((f) => { for (const s of KV_FEED_STATES) this.set({ ...rankLabels(f), state: s }, s === f.state ? 1 : 0); });
      },
    });
    rankGauge('select_service_kv_feed_last_event_age_seconds', 'Seconds since the rank\'s last KV-event batch (+Inf before the first)',
      (f) => f.lastBatchAgeSecs ?? Infinity);
    new Counter({
      name: 'select_service_kv_event_batches_total',
      help: 'KV-event batches by outcome: applied live, applied through replay, dropped (bad frames, undecodable, stale)',
      labelNames: [...RANK_LABELS, 'outcome'], registers,
      collect() {
        this.reset();
        feeds((f) => {
          const c = f.counters, l = rankLabels(f);
          this.inc({ ...l, outcome: 'applied' }, c.batchesApplied - c.batchesReplayed);
          this.inc({ ...l, outcome: 'replayed' }, c.batchesReplayed);
          this.inc({ ...l, outcome: 'dropped' }, droppedBatches(c));
        });
      },
    });
    new Counter({
      name: 'select_service_kv_blocks_total', help: 'Blocks the rank\'s KV events stored in or removed from the index',
      labelNames: [...RANK_LABELS, 'op'], registers,
      collect() {
        this.reset();
        feeds((f) => {
          this.inc({ ...rankLabels(f), op: 'stored' }, f.counters.blocksStored);
          this.inc({ ...rankLabels(f), op: 'removed' }, f.counters.blocksRemoved);
        });
      },
    });
    rankCounter('select_service_kv_gaps_total', 'Sequence gaps detected in the rank\'s KV-event stream', (f) => f.counters.gaps);
    rankCounter('select_service_kv_block_size_mismatches_total',
      'KV-event stores whose block size (or tokens per block) differs from the worker\'s block_size', (f) => shapeMismatches(f.counters));
    new Gauge({
      name: 'select_service_index_blocks', help: 'Blocks held in the index per tier, counting each worker rank\'s copy',
      labelNames: [...PART_LABELS, 'tier'], registers,
      collect() {
        this.reset();
        parts((p) => {
          for (let t = 0; t < TIERS.length; t++) this.set({ ...partLabels(p), tier: TIERS[t] }, p.index.index.holdingCount(t as Tier));
        });
      },
    });
    new Gauge({
      name: 'select_service_index_memory_bytes', help: 'WebAssembly linear memory of the index (it grows, never shrinks)',
      registers,
      collect() {
        let bytes = 0;
        for (const w of new Set(src.wasmInstances())) bytes += w.memoryBytes();
        this.set(bytes);
      },
    });
    this.selections = new Counter({
      name: 'select_service_selections_total',
      help: 'Selections and bookings by route and outcome (rejected: 429/503 capacity or readiness; error: any other failure)',
      labelNames: [...PART_LABELS, 'route', 'outcome'], registers,
    });
    this.duration = new Histogram({
      name: 'select_service_selection_duration_seconds', help: 'Time inside the service for a selection or booking, queue wait included',
      labelNames: ['route'], buckets: DURATION_BUCKETS, registers,
    });
    this.overlap = new Histogram({
      name: 'select_service_selection_overlap_ratio',
      help: 'Device-tier match of the chosen rank over the prompt length (overlap.gpu / isl_tokens) per booking of the router\'s choice',
      labelNames: PART_LABELS, buckets: RATIO_BUCKETS, registers,
    });
    new Gauge({
      name: 'select_service_active_reservations', help: 'Live bookings', labelNames: PART_LABELS, registers,
      collect() { this.reset(); parts((p) => this.set(partLabels(p), p.loads.size)); },
    });
    new Gauge({
      name: 'select_service_queue_depth', help: 'Requests waiting in the admission queue', labelNames: PART_LABELS, registers,
      collect() { this.reset(); parts((p) => this.set(partLabels(p), p.queue.pending().count)); },
    });
    new Gauge({
      name: 'select_service_pending_selections', help: 'Entries in the pending-selection cache', registers,
      collect() { this.set(src.pendingSelections()); },
    });
    new Counter({
      name: 'select_service_replica_messages_total',
      help: 'Replica-sync messages by direction and outcome (received dropped: malformed, own, queue full or refused by the core)',
      labelNames: ['direction', 'outcome'], registers,
      collect() {
        this.reset();
        const s = src.replicaStats();
        if (s === null) return;
        this.inc({ direction: 'sent', outcome: 'ok' }, s.sent);
        this.inc({ direction: 'sent', outcome: 'dropped' }, s.sendDropped);
        this.inc({ direction: 'received', outcome: 'ok' }, s.applied);
        this.inc({ direction: 'received', outcome: 'dropped' }, s.malformed + s.ownDropped + s.receiveDropped + s.rejected);
      },
    });
  }

  /** The core's `onSelection` hook. */
  readonly onSelection = (ev: SelectionEvent): void => {
    this.selections.inc({ model_name: ev.modelName, routing_group: ev.routingGroup, route: ev.route, outcome: ev.outcome });
    this.duration.observe({ route: ev.route }, ev.seconds);
    const b = ev.booked;
    if (b !== undefined && b.islTokens > 0) {
      this.overlap.observe({ model_name: ev.modelName, routing_group: ev.routingGroup }, Math.min(b.deviceOverlapTokens / b.islTokens, 1));
    }
  };

  /** The text exposition: this service's families, then the process metrics. */
  async scrape(): Promise<MetricsExposition> {
    const own = await this.registry.metrics();
    const text = this.includeProcess ? `${own}\n${await processMetrics().metrics()}` : own;
    return { contentType: this.registry.contentType, text };
  }
}

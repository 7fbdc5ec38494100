/**
 * Prometheus metrics of one service (`GET /metrics`), with prom-client. Each service has its own
 * {@link Registry}, so two services in one process never mix their series; the process-level
 * default metrics (CPU, memory, event-loop lag, GC) describe the process, not a service, and
 * live in one process-wide registry created on first use (prom-client's collectors install
 * observers that are never removed: one set per process, not one per service).
 *
 * Where the numbers come from, so the hot paths pay nothing or next to nothing:
 * - selections: {@link ServiceMetrics.onSelection}, the core's `onSelection` hook, adds to plain
 *   counts and bucket arrays (a map lookup and a few additions, ~0.2 µs; prom-client's own
 *   `inc`/`observe` hash the label set on each call, ~1-2 µs per selection) that prom-client
 *   reads at scrape time;
 * - everything else is read at scrape time by `collect` callbacks: the KV-event counters the
 *   ingress already keeps per rank (plain numbers bumped per batch or per event), the feed
 *   states, the index's holdings per tier, wasm memory, bookings, queues, the pending-selection
 *   cache and the replica mesh (replica-metrics.ts). Series are rebuilt on each scrape, so a removed worker's
 *   series are gone from the next one.
 */
import { Counter, Gauge, Registry, collectDefaultMetrics, type Metric } from 'prom-client';
import { KV_FEED_STATES } from '../core/index/feed.js';
import type { Tier } from '../core/index/index-types.js';
import type { Partition } from '../core/catalog/partition.js';
import type { SelectionEvent, SelectionOutcome, SelectionRoute } from '../core/options.js';
import type { MetricsExposition } from '../core/wire/types.js';
import type { Wasm } from '../core/index/wasm.js';
import { feedUp } from './kv-events/feed-health.js';
import type { RankFeedSample } from './kv-events/ingress.js';
import { droppedBatches, shapeMismatches } from './kv-events/stats.js';
import type { ReplicaMetrics } from './replica-sync.js';
import { registerReplicaMetrics } from './replica-metrics.js';

/** What the metrics read at scrape time. */
export interface MetricsSource {
  partitionList(): Partition[];
  /** Entries in the pending-selection cache. */
  pendingSelections(): number;
  /** The wasm instances whose linear memory counts (the shared module, and any partition's own). */
  wasmInstances(): Iterable<Wasm>;
  /** Every rank feed (empty without the KV-event ingress). */
  feedSamples(): RankFeedSample[];
  /** The replica mesh (null when replica sync is off). */
  replica(): ReplicaMetrics | null;
  /** Unknown request-body fields seen, per (route, field label) (unknown-fields.ts bounds the labels). */
  unknownFields(): Iterable<{ route: string; field: string; count: number }>;
  /** Connections the HTTP server closed at a drain limit after an early answer, by limit. */
  drainCuts(): Readonly<{ bytes: number; time: number }>;
}


/** Selection duration buckets: 10 µs to 1 s. */
export const DURATION_BUCKETS = [1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];
/** Overlap-ratio buckets: exact misses (0) apart, then tenths, then the near-complete hits. */
export const RATIO_BUCKETS = [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1];

/** `tier` label values, by Tier (device, host_pinned in /dump, disk, external). */
const TIERS = ['device', 'host', 'disk', 'external'] as const;
const ROUTES: readonly SelectionRoute[] = ['select', 'select_and_reserve', 'reservations'];
const OUTCOMES: readonly SelectionOutcome[] = ['ok', 'rejected', 'error'];

/** Observations of one histogram series: per-bucket counts (the last one above every bound), sum, count. */
class Buckets {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  constructor(private readonly bounds: readonly number[]) { this.counts = new Float64Array(bounds.length + 1); }
  observe(v: number): void {
    let i = 0;
    while (i < this.bounds.length && v > this.bounds[i]) i++;
    this.counts[i]++;
    this.sum += v;
    this.count++;
  }
}

interface PartitionSelections { labels: Record<string, string>; counts: Float64Array; overlap: Buckets }

/**
 * A histogram family for prom-client's registry whose series are {@link Buckets} filled on the
 * hot path without prom-client (its `observe` hashes the label set on every call): the registry
 * reads them through `get()` at scrape time, in the same shape its own histograms produce.
 */
class BucketsFamily {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  constructor(readonly name: string, readonly help: string, private readonly bounds: readonly number[],
    private readonly series: () => Iterable<readonly [Record<string, string>, Buckets]>) {}

  get(): { name: string; help: string; type: string; aggregator: string; values: { labels: Record<string, string | number>; value: number; metricName: string }[] } {
    const values = [];
    for (const [labels, b] of this.series()) {
      let cumulative = 0;
      for (let i = 0; i <= this.bounds.length; i++) {
        cumulative += b.counts[i];
        values.push({ labels: { le: i < this.bounds.length ? this.bounds[i] : '+Inf', ...labels }, value: cumulative, metricName: `${this.name}_bucket` });
      }
      values.push({ labels, value: b.sum, metricName: `${this.name}_sum` }, { labels, value: b.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /** prom-client's `resetMetrics()`; the counts belong to the service. */
  reset(): void {}
}

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
  /** Selection counts and overlap ratios per partition, by `model\0group`. */
  private readonly sel = new Map<string, PartitionSelections>();
  /** Selection durations per route (ROUTES order). */
  private readonly duration = ROUTES.map(() => new Buckets(DURATION_BUCKETS));

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
    const sel = this.sel;
    new Counter({
      name: 'select_service_selections_total',
      help: 'Selections and bookings by route and outcome (rejected: 429/503 capacity or readiness; error: any other failure)',
      labelNames: [...PART_LABELS, 'route', 'outcome'], registers,
      collect() {
        this.reset();
        for (const p of sel.values()) {
          for (let r = 0; r < ROUTES.length; r++) {
            for (let o = 0; o < OUTCOMES.length; o++) {
              const n = p.counts[r * OUTCOMES.length + o];
              if (n > 0) this.inc({ ...p.labels, route: ROUTES[r], outcome: OUTCOMES[o] }, n);
            }
          }
        }
      },
    });
    const register = (f: BucketsFamily): void => this.registry.registerMetric(f as unknown as Metric);
    register(new BucketsFamily('select_service_selection_duration_seconds',
      'Time inside the service for a selection or booking, queue wait included', DURATION_BUCKETS,
      () => ROUTES.flatMap((route, r) => (this.duration[r].count > 0 ? [[{ route }, this.duration[r]] as const] : []))));
    register(new BucketsFamily('select_service_selection_overlap_ratio',
      'Device-tier match of the chosen rank over the prompt length (overlap.gpu / isl_tokens) per booking of the router\'s choice',
      RATIO_BUCKETS, () => [...sel.values()].filter((p) => p.overlap.count > 0).map((p) => [p.labels, p.overlap] as const)));
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
      name: 'select_service_unknown_request_fields_total',
      help: 'Request-body fields the route does not know, ignored (field: dotted inside nested objects; "other" past the first 64 names)',
      labelNames: ['route', 'field'], registers,
      collect() { this.reset(); for (const u of src.unknownFields()) this.inc({ route: u.route, field: u.field }, u.count); },
    });
    new Counter({
      name: 'select_service_http_drains_cut_total',
      help: 'Connections closed at a drain limit while the client was still sending after an early answer (413, 415, 401, 408, ...): it may not have read it',
      labelNames: ['limit'], registers,
      collect() {
        this.reset();
        const cuts = src.drainCuts();
        this.inc({ limit: 'bytes' }, cuts.bytes);
        this.inc({ limit: 'time' }, cuts.time);
      },
    });
    registerReplicaMetrics(registers, () => src.replica());
  }

  /** The core's `onSelection` hook: a few additions to plain numbers (prom-client reads them at scrape time). */
  readonly onSelection = (ev: SelectionEvent): void => {
    const key = `${ev.modelName}\u0000${ev.routingGroup}`;
    let p = this.sel.get(key);
    if (p === undefined) {
      p = { labels: { model_name: ev.modelName, routing_group: ev.routingGroup }, counts: new Float64Array(ROUTES.length * OUTCOMES.length),
        overlap: new Buckets(RATIO_BUCKETS) };
      this.sel.set(key, p);
    }
    const r = ROUTES.indexOf(ev.route);
    p.counts[r * OUTCOMES.length + OUTCOMES.indexOf(ev.outcome)]++;
    this.duration[r].observe(ev.seconds);
    const b = ev.booked;
    if (b !== undefined && b.islTokens > 0) p.overlap.observe(Math.min(b.deviceOverlapTokens / b.islTokens, 1));
  };

  /** The text exposition: this service's families, then the process metrics. */
  async scrape(): Promise<MetricsExposition> {
    const own = await this.registry.metrics();
    const text = this.includeProcess ? `${own}\n${await processMetrics().metrics()}` : own;
    return { contentType: this.registry.contentType, text };
  }
}

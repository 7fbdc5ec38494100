/**
 * SelectionService (Node): a {@link SelectionCore} plus what a running process needs around it:
 * the KV-event ingress (ZMQ), replica sync and its peer routes, start-up recovery from peers'
 * `/dump`, the periodic maintenance timer, the warnings a first deployment needs (a worker
 * registered incomplete, request fields no route knows, with their metric), and an idempotent
 * shutdown that closes sockets. It is the core (every operation is the core's own method), so
 * embedders and the HTTP layer call one object. Built by {@link SelectionServiceBuilder}.
 */
import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import { SelectionCore } from '../core/core.js';
import type { CoreHooks, CoreLimits, CoreOptions, EndpointPolicy, SelectionCacheConfig, SessionAffinityConfig } from '../core/options.js';
import { endpointPolicy } from '../core/catalog/endpoint-policy.js';
import type { IndexFeed } from '../core/index/feed.js';
import { systemRng, type Clock, type Rng } from '../core/random.js';
import { parsePolicyConfig, type RouterPolicyConfig } from '../core/select/policy-config.js';
import type { PolicyRegistry } from '../core/select/policy.js';
import { parseJson } from '../core/wire/json.js';
import { DumpSchema } from '../core/wire/dump.js';
import type { RouterEvent } from '../core/index/kv-index.js';
import { ConfigError, LIMITS, type RouterConfig } from '../core/config/config.js';
import { parseTrackingKey } from '../core/index/tracking-hash.js';
import { SelectionError, replicaSyncDisabled } from '../core/errors.js';
import type { MetricsExposition, ServiceApi } from '../core/wire/types.js';
import { getWasm } from '../core/index/wasm.js';
import type { Registry } from 'prom-client';
import { ServiceMetrics } from './metrics.js';
import { ReplicaSync } from './replica-sync.js';
import { resolveReplicaLimits, type ReplicaSyncLimits } from './replica-limits.js';
import { ZmqKvIngress, type RankFeedSample } from './kv-events/ingress.js';
import { DEFAULT_KV_FEED_SILENCE_SECS } from './kv-events/feed-health.js';
import type { WorkerIngestStats } from './kv-events/stats.js';
import { silentLogger, type Logger } from './logger.js';
import { UnknownFieldLog } from './unknown-fields.js';
import { partitionLabel } from '../core/errors.js';
import type { ReadyResponse, WorkerRecord } from '../core/wire/types.js';

/** What the service needs of the KV-event ingress. */
interface IngressHandle extends Required<IndexFeed> {
  setIndexerReady(): void;
  close(): Promise<void>;
  stats(): WorkerIngestStats[];
  stats(workerId: bigint): WorkerIngestStats | null;
  samples(): RankFeedSample[];
}

/** Everything the builder collects. */
export interface ServiceOptions {
  indexerPeers: string[];
  replicaSyncPort: number | null;
  replicaSyncPeers: string[];
  /** Limits of the replica mesh (`--replica-sync-*`); absent fields take their defaults. */
  replicaSyncLimits: Partial<ReplicaSyncLimits>;
  selectionCache: Partial<SelectionCacheConfig>;
  sessionAffinity: SessionAffinityConfig | null;
  policies: PolicyRegistry | null;
  logger: Logger;
  clock?: Clock;
  rng?: Rng;
  /** Overrides reading `router_tracking_key_file`. */
  trackingKey?: Uint8Array;
  /** A KV-event feed; by default the ZMQ ingress when `use_kv_events` is on. */
  feed?: IndexFeed | null;
  /** The KV-feed health window, seconds (`--kv-feed-silence-secs`). */
  kvFeedSilenceSecs: number;
  /** Limits of the default KV-event ingress. */
  kvEvents: KvEventLimits;
  /** Capacity limits (`--max-*`). */
  limits: Partial<CoreLimits>;
  /** `--allowed-endpoints` entries: where workers and replica peers may make the service connect; [] = anywhere. */
  allowedEndpoints: string[];
  /** The bearer token sent to `--indexer-peers` (authentication on), read when recovery runs. */
  peerToken: (() => string) | null;
}

/**
 * Limits of the KV-event ingress: message size, ranks (one connection each; null: no cap), and
 * the busy time ingestion may hold the event loop before selections get a turn.
 */
export interface KvEventLimits { maxMessageBytes?: number; maxRanks?: number | null; yieldBudgetMs?: number }

/** Builds a {@link SelectionService}. */
export class SelectionServiceBuilder {
  private readonly o: ServiceOptions = {
    indexerPeers: [], replicaSyncPort: null, replicaSyncPeers: [], replicaSyncLimits: {}, selectionCache: {}, sessionAffinity: null,
    policies: null, logger: silentLogger, kvEvents: {}, limits: {}, allowedEndpoints: [], peerToken: null,
    kvFeedSilenceSecs: DEFAULT_KV_FEED_SILENCE_SECS,
  };

  constructor(private readonly config: RouterConfig) {}

  /** HTTP base URLs to recover the index from at start-up. */
  indexerPeers(urls: readonly string[]): this { this.o.indexerPeers = [...urls]; return this; }
  /** Replica sync: bind a PUB on `tcp://*:port`, connect a SUB to each peer; `limits` as `--replica-sync-*`. */
  replicaSync(port: number, peers: readonly string[] = [], limits: Partial<ReplicaSyncLimits> = {}): this {
    this.o.replicaSyncPort = port;
    this.o.replicaSyncPeers = [...peers];
    this.o.replicaSyncLimits = { ...limits };
    return this;
  }
  /** Pending-selection cache limits. */
  selectionCache(c: Partial<SelectionCacheConfig>): this { this.o.selectionCache = { ...c }; return this; }
  /** Session affinity tables. */
  sessionAffinity(c: SessionAffinityConfig): this { this.o.sessionAffinity = { ...c }; return this; }
  /** Custom worker-selection policy types. */
  policies(r: PolicyRegistry): this { this.o.policies = r; return this; }
  logger(l: Logger): this { this.o.logger = l; return this; }
  clock(c: Clock): this { this.o.clock = c; return this; }
  rng(r: Rng): this { this.o.rng = r; return this; }
  trackingKey(k: Uint8Array): this { this.o.trackingKey = k; return this; }
  /** Replace the KV-event feed (null: none, the index is fed by the host). */
  feed(f: IndexFeed | null): this { this.o.feed = f; return this; }
  /**
   * The KV-feed health window: a rank still not connected, or disconnected, this long is warned
   * about, and so is one whose completed prefills are followed by no batch this long (default 30 s).
   */
  kvFeedSilence(secs: number): this { this.o.kvFeedSilenceSecs = secs; return this; }
  /** Limits of the default KV-event ingress (by default no rank cap: the CLI derives one from `ulimit -n`). */
  kvEvents(l: KvEventLimits): this { this.o.kvEvents = { ...l }; return this; }
  /** Capacity limits: prompt blocks, live bookings, partitions (README "Limits"). */
  limits(l: Partial<CoreLimits>): this { this.o.limits = { ...l }; return this; }
  /**
   * The outbound-connection allowlist (`--allowed-endpoints`: host patterns, CIDR blocks, ipc://
   * prefixes); an empty list allows every endpoint. Malformed entries fail `build()`.
   */
  allowedEndpoints(entries: readonly string[]): this { this.o.allowedEndpoints = [...entries]; return this; }
  /** The bearer token to present to `--indexer-peers` (their `/dump` needs it when they authenticate). */
  peerToken(get: () => string): this { this.o.peerToken = get; return this; }

  /** Validates, sets up the core and its attachments, recovers from peers, and returns the service. */
  async build(): Promise<SelectionService> {
    const cfg = this.config;
    const o = this.o;
    if (o.replicaSyncPeers.length > 0 && o.replicaSyncPort === null) {
      throw new ConfigError(['--replica-sync-peers: requires --replica-sync-port']);
    }
    if (o.replicaSyncPort !== null && !(Number.isInteger(o.replicaSyncPort) && o.replicaSyncPort > 0 && o.replicaSyncPort <= 65535)) {
      throw new ConfigError([`--replica-sync-port: must be an integer between 1 and 65535 (got ${o.replicaSyncPort})`]);
    }
    const mesh = resolveReplicaLimits(o.replicaSyncLimits).problems;
    if (mesh.length > 0) throw new ConfigError(mesh);
    if (!(Number.isFinite(o.kvFeedSilenceSecs) && o.kvFeedSilenceSecs > 0)) {
      throw new ConfigError([`--kv-feed-silence-secs: must be a number greater than 0 (got ${o.kvFeedSilenceSecs})`]);
    }
    let policy: EndpointPolicy | null = null;
    try {
      if (o.allowedEndpoints.length > 0) policy = endpointPolicy(o.allowedEndpoints);
    } catch (err) {
      throw new ConfigError([`--allowed-endpoints: ${(err as Error).message}`]);
    }
    const trackingKey = o.trackingKey ?? await readTrackingKey(cfg);
    const policyConfig = await readPolicyConfig(cfg);
    const hooks: CoreHooks = {};
    // The ZMQ ingress is the default feed when use_kv_events is on (a given feed replaces it).
    const ingress: IngressHandle | null = o.feed === undefined && cfg.useKvEvents
      ? new ZmqKvIngress({ logger: o.logger, ...o.kvEvents, clock: o.clock, silenceSecs: o.kvFeedSilenceSecs }) : null;
    const feed = o.feed === undefined ? ingress : o.feed;
    const coreOptions: CoreOptions = {
      clock: o.clock, rng: o.rng, selectionCache: o.selectionCache, trackingKey, policies: o.policies ?? undefined,
      policyConfig, feed: feed ?? undefined, hooks, sessionAffinity: o.sessionAffinity, replicaId: systemRng().u64() | 1n,
      limits: o.limits, endpointPolicy: policy ?? undefined,
    };
    let service: SelectionService;
    try {
      service = SelectionService.create(cfg, coreOptions, o, ingress);
    } catch (err) {
      await ingress?.close();
      throw err;
    }
    for (const w of service.warnings) o.logger.warn({}, w);
    if (o.replicaSyncPort !== null) {
      try {
        const replica = await ReplicaSync.start({
          port: o.replicaSyncPort, peers: o.replicaSyncPeers, affinity: o.sessionAffinity !== null, endpointPolicy: policy,
          logger: o.logger, host: service, applyAffinity: (e) => service.applyAffinityEvent(e), limits: o.replicaSyncLimits,
          workersReady: () => service.schedulableWorkerIds().length > 0,
        });
        service.attachReplica(replica);
        hooks.onLifecycle = (ev) => replica.publishLifecycle(ev);
        hooks.onAffinity = (ev) => replica.publishAffinity(ev);
        hooks.onUnknownFree = (id) => replica.publishUnknownFree(id);
      } catch (err) {
        await service.shutdown();
        throw new ConfigError([err instanceof SelectionError ? `--replica-sync-peers: ${err.message}`
          : `--replica-sync-port: cannot bind tcp://*:${o.replicaSyncPort}: ${(err as Error).message}`]);
      }
    }
    if (o.indexerPeers.length > 0) await recoverFromPeers(service, o.indexerPeers, o.logger, LIMITS.recoveryDelayMs, o.peerToken?.());
    ingress?.setIndexerReady();
    return service;
  }
}

/** The 32-byte key of `keyed-xxh3-v1` from `router_tracking_key_file`, when that mode is on. */
async function readTrackingKey(cfg: RouterConfig): Promise<Uint8Array | undefined> {
  if (cfg.routerTrackingHash !== 'keyed-xxh3-v1' || !cfg.routerTrackingKeyFile) return undefined;
  let bytes: Uint8Array;
  try {
    bytes = new Uint8Array(await readFile(cfg.routerTrackingKeyFile));
  } catch (err) {
    throw new ConfigError([`DYN_ROUTER_TRACKING_KEY_FILE / --router-tracking-key-file: cannot read ${cfg.routerTrackingKeyFile}: ${(err as Error).message}`]);
  }
  const key = parseTrackingKey(bytes);
  bytes.fill(0);
  return key;
}

/** The `DYN_ROUTER_POLICY_CONFIG` YAML document, when set. */
async function readPolicyConfig(cfg: RouterConfig): Promise<RouterPolicyConfig | null> {
  if (!cfg.routerPolicyConfig) return null;
  try {
    return parsePolicyConfig(parseYaml(await readFile(cfg.routerPolicyConfig, 'utf8')));
  } catch (err) {
    throw new ConfigError([`DYN_ROUTER_POLICY_CONFIG: ${cfg.routerPolicyConfig}: ${(err as Error).message}`]);
  }
}

/**
 * Start-up recovery: wait ~1 s (slow joiners), then `GET <url>/dump` from each peer in order
 * (10 s timeout) until one answers; load its partitions. Never fails the start: no reachable
 * peer or a bad dump logs a warning and the service starts empty.
 */
export async function recoverFromPeers(core: SelectionCore, peers: readonly string[], logger: Logger,
  delayMs: number = LIMITS.recoveryDelayMs, token?: string): Promise<boolean> {
  await new Promise((r) => setTimeout(r, delayMs));
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  for (const url of peers) {
    try {
      const res = await fetch(`${url.replace(/\/+$/, '')}/dump`, { headers, signal: AbortSignal.timeout(LIMITS.recoveryTimeoutMs) });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const parsed = DumpSchema.safeParse(parseJson(await res.text()));
      if (!parsed.success) throw new Error(`bad dump: ${parsed.error.issues[0]?.path.join('.')}: ${parsed.error.issues[0]?.message}`);
      const dump: Record<string, { block_size: number; events: RouterEvent[] }> = {};
      for (const [key, part] of Object.entries(parsed.data)) {
        if ('error' in part) { logger.warn({ peer: url, partition: key, error: part.error }, 'peer dump partition failed; skipped'); continue; }
        dump[key] = part;
      }
      const n = core.loadDump(dump);
      logger.info({ peer: url, partitions: Object.keys(dump).length, events: n }, 'recovered the index from a peer');
      return true;
    } catch (err) {
      logger.warn({ peer: url, err: (err as Error).message }, 'index recovery from peer failed');
    }
  }
  logger.warn({ peers }, 'no indexer peer answered; starting with an empty index');
  return false;
}

/**
 * The running service: the core's operations, the replica peer routes, the KV-event ingress
 * counters, and shutdown. After shutdown, mutations and selections fail
 * `selection service is shutting down`; delete still works.
 */
export class SelectionService extends SelectionCore implements ServiceApi {
  private readonly timer: ReturnType<typeof setInterval>;
  private closed: Promise<void> | null = null;
  private replica: ReplicaSync | null = null;
  private readonly prom: ServiceMetrics;
  private readonly unknownFields: UnknownFieldLog;
  /** Connections the HTTP server closed at a drain limit after an early answer, by limit. */
  private readonly drainCuts = { bytes: 0, time: 0 };

  private constructor(config: RouterConfig, core: CoreOptions, rng: Rng, private readonly options: ServiceOptions,
    private readonly ingress: IngressHandle | null) {
    super(config, core, SelectionCore.normalizerFor(config, core, rng), rng);
    this.unknownFields = new UnknownFieldLog(options.logger, this.clock);
    this.prom = new ServiceMetrics({
      partitionList: () => this.partitionList(),
      pendingSelections: () => this.pending.size(),
      wasmInstances: () => [getWasm(), ...this.partitionList().map((p) => p.index.index.wasm)],
      feedSamples: () => this.ingress?.samples() ?? [],
      replica: () => this.replica?.metrics() ?? null,
      unknownFields: () => this.unknownFields.counts(),
      drainCuts: () => this.drainCuts,
    });
    this.hooks.onSelection = this.prom.onSelection;
    this.timer = setInterval(() => {
      try { this.maintain(); } catch (err) { options.logger.error({ err }, 'maintenance failed'); }
    }, 1000);
    this.timer.unref();
  }

  /** A service over a validated core (throws the core's ConfigError). */
  static create(config: RouterConfig, core: CoreOptions, options: ServiceOptions, ingress: IngressHandle | null): SelectionService {
    return new SelectionService(config, core, core.rng ?? systemRng(), options, ingress);
  }

  /** Replica sync, once its sockets are up (the builder's last step). */
  attachReplica(r: ReplicaSync): void { this.replica = r; }

  /** The replica-sync port, when enabled. */
  get replicaSyncPort(): number | null { return this.options.replicaSyncPort; }

  registerReplicaPeer(endpoint: string): { created: boolean } {
    if (!this.replica) throw replicaSyncDisabled();
    return this.replica.register(endpoint);
  }

  deregisterReplicaPeer(endpoint: string): void {
    if (!this.replica) throw replicaSyncDisabled();
    this.replica.deregister(endpoint);
  }

  listReplicaPeers(): string[] { return this.replica ? this.replica.list() : []; }

  /**
   * Registers or replaces a worker; a record left `incomplete` is one warning naming the worker
   * and the reasons. With replica sync, the peers' bookings on it are asked for again.
   */
  override upsertWorker(input: unknown): WorkerRecord { return this.workerChanged(super.upsertWorker(input)); }

  /** Updates a worker; as {@link upsertWorker}. */
  override patchWorker(workerId: bigint, input: unknown): WorkerRecord { return this.workerChanged(super.patchWorker(workerId, input)); }

  private workerChanged(rec: WorkerRecord): WorkerRecord {
    this.replica?.workersChanged();
    return this.warnIncomplete(rec);
  }

  /** A body field the route does not know: counted, and warned about at most once a minute per (route, field). */
  unknownField(route: string, field: string, known: readonly string[]): void { this.unknownFields.note(route, field, known); }

  /** A connection closed at a drain limit after an early answer: counted (the server logs it). */
  drainCut(limit: 'bytes' | 'time'): void { this.drainCuts[limit]++; }

  private warnIncomplete(rec: WorkerRecord): WorkerRecord {
    if (rec.lifecycle === 'incomplete') {
      const reasons = rec.not_schedulable_reasons ?? [];
      this.options.logger.warn({ worker_id: String(rec.worker_id), model_name: rec.model_name, routing_group: rec.routing_group, reasons },
        `worker ${rec.worker_id} of ${partitionLabel(rec.model_name, rec.routing_group)} is incomplete (not schedulable): ${reasons.join('; ')}`);
    }
    return rec;
  }

  /** `GET /metrics`: this service's Prometheus families plus the process metrics. */
  metrics(): Promise<MetricsExposition> { return this.prom.scrape(); }

  /** This service's own prom-client registry (its families only), e.g. to merge into an embedder's. */
  get metricsRegistry(): Registry { return this.prom.registry; }

  /** Replica-sync counters (null when replica sync is off). */
  replicaStats(): ReplicaSync['stats'] | null { return this.replica?.stats ?? null; }

  /** The replica mesh's metrics, anti-entropy and mesh state included (null when replica sync is off). */
  replicaMetrics(): ReturnType<ReplicaSync['metrics']> | null { return this.replica?.metrics() ?? null; }

  /**
   * Readiness: the core's, and with replica sync, not ready after start-up until every peer is
   * connected both ways and the first digest exchange since the workers' registration is done (or
   * `--replica-sync-ready-timeout-secs` ran out), so a load balancer sends no bookings the peers
   * would miss and the replica holds theirs.
   */
  override ready(): ReadyResponse {
    const r = super.ready();
    if (!this.replica) return r;
    const mesh = this.replica.meshState();
    r.replica_sync = { meshed: mesh.meshed, waiting: mesh.waiting };
    if (!mesh.meshed) r.ready = false;
    return r;
  }

  /** KV-event ingress counters of one worker, or of all (null without the ZMQ ingress or listeners). */
  ingressStats(): WorkerIngestStats[] | null;
  ingressStats(workerId: bigint): WorkerIngestStats | null;
  ingressStats(workerId?: bigint): WorkerIngestStats[] | WorkerIngestStats | null {
    if (!this.ingress) return null;
    return workerId === undefined ? this.ingress.stats() : this.ingress.stats(workerId);
  }

  /** Idempotent: stop selections (queued ones fail), close listeners, sockets and timers. */
  override shutdown(): Promise<void> {
    if (this.closed) return this.closed;
    void super.shutdown();
    clearInterval(this.timer);
    this.closed = (async () => {
      await this.replica?.close();
      await this.ingress?.close();
    })();
    return this.closed;
  }
}

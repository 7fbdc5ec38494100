/**
 * SelectionService (Node): the SelectionCore plus what a running process needs around it: the
 * KV-event ingress (ZMQ), replica sync, start-up recovery from peers' `/dump`, the periodic
 * maintenance timer, and an idempotent shutdown. Built by {@link SelectionServiceBuilder}.
 */
import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import {
  SelectionCore, systemRng, type CoreHooks, type CoreOptions, type IndexFeed, type SelectionCacheConfig, type SessionAffinityConfig,
} from '../core/core.js';
import { parsePolicyConfig, type RouterPolicyConfig } from '../core/select/policy-config.js';
import { parseJson } from '../core/wire/json.js';
import { ReplicaSync } from './replica-sync.js';
import { ZmqKvIngress } from './kv-events/ingress.js';
import type { WorkerIngestStats } from './kv-events/stats.js';
import type { RouterEvent } from '../core/index/kv-index.js';
import { ConfigError, LIMITS, type RouterConfig } from '../core/config/config.js';
import { parseTrackingKey } from '../core/index/tracking-hash.js';
import { SelectionError, replicaSyncDisabled } from '../core/errors.js';
import type { PolicyRegistry } from '../core/select/policy.js';
import type { FilterQuery } from '../core/wire/schemas.js';
import type {
  Clock, DumpResponse, ModelLoadResponse, OverlapScoresResponse, PotentialLoad, ReadyResponse,
  ReservationResponse, Rng, SelectOptions, SelectResponse, ServiceApi, StatusOk, WorkerRecord,
} from '../core/wire/types.js';

/** A pino-compatible logger subset. */
export interface Logger {
  info(obj: unknown, msg?: string): void;
  warn(obj: unknown, msg?: string): void;
  error(obj: unknown, msg?: string): void;
  debug(obj: unknown, msg?: string): void;
}

/** What the service needs of the KV-event ingress. */
interface IngressHandle extends IndexFeed {
  setIndexerReady(): void;
  close(): Promise<void>;
  stats(): WorkerIngestStats[];
  stats(workerId: bigint): WorkerIngestStats | null;
}

const silent: Logger = { info() {}, warn() {}, error() {}, debug() {} };


/** Everything the builder collects. */
export interface ServiceOptions {
  indexerPeers: string[];
  replicaSyncPort: number | null;
  replicaSyncPeers: string[];
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
}

/** Builds a {@link SelectionService} (api §10). */
export class SelectionServiceBuilder {
  private readonly o: ServiceOptions = {
    indexerPeers: [], replicaSyncPort: null, replicaSyncPeers: [], selectionCache: {}, sessionAffinity: null,
    policies: null, logger: silent,
  };

  constructor(private readonly config: RouterConfig) {}

  /** HTTP base URLs to recover the index from at start-up (api §7.2). */
  indexerPeers(urls: readonly string[]): this { this.o.indexerPeers = [...urls]; return this; }
  /** Replica sync: bind a PUB on `tcp://*:port`, connect a SUB to each peer (api §6). */
  replicaSync(port: number, peers: readonly string[] = []): this { this.o.replicaSyncPort = port; this.o.replicaSyncPeers = [...peers]; return this; }
  /** Pending-selection cache limits (api §5.2). */
  selectionCache(c: Partial<SelectionCacheConfig>): this { this.o.selectionCache = { ...c }; return this; }
  /** Session affinity tables (api §8). */
  sessionAffinity(c: SessionAffinityConfig): this { this.o.sessionAffinity = { ...c }; return this; }
  /** Custom worker-selection policy types (api §10). */
  policies(r: PolicyRegistry): this { this.o.policies = r; return this; }
  logger(l: Logger): this { this.o.logger = l; return this; }
  clock(c: Clock): this { this.o.clock = c; return this; }
  rng(r: Rng): this { this.o.rng = r; return this; }
  trackingKey(k: Uint8Array): this { this.o.trackingKey = k; return this; }
  /** Replace the KV-event feed (null: none, the index is fed by the host). */
  feed(f: IndexFeed | null): this { this.o.feed = f; return this; }

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
    let trackingKey = o.trackingKey;
    if (!trackingKey && cfg.routerTrackingHash === 'keyed-xxh3-v1' && cfg.routerTrackingKeyFile) {
      let bytes: Uint8Array;
      try {
        bytes = new Uint8Array(await readFile(cfg.routerTrackingKeyFile));
      } catch (err) {
        throw new ConfigError([`DYN_ROUTER_TRACKING_KEY_FILE / --router-tracking-key-file: cannot read ${cfg.routerTrackingKeyFile}: ${(err as Error).message}`]);
      }
      trackingKey = parseTrackingKey(bytes);
      bytes.fill(0);
    }
    let policyConfig: RouterPolicyConfig | null = null;
    if (cfg.routerPolicyConfig) {
      try {
        policyConfig = parsePolicyConfig(parseYaml(await readFile(cfg.routerPolicyConfig, 'utf8')));
      } catch (err) {
        throw new ConfigError([`DYN_ROUTER_POLICY_CONFIG: ${cfg.routerPolicyConfig}: ${(err as Error).message}`]);
      }
    }
    const hooks: CoreHooks = {};
    // The ZMQ ingress is the default feed when use_kv_events is on (a given feed replaces it).
    const ingress: IngressHandle | null = o.feed === undefined && cfg.useKvEvents ? new ZmqKvIngress({ logger: o.logger }) : null;
    const feed = o.feed === undefined ? ingress : o.feed;
    const coreOptions: CoreOptions = {
      clock: o.clock, rng: o.rng, selectionCache: o.selectionCache, trackingKey, policies: o.policies ?? undefined,
      policyConfig, feed: feed ?? undefined, hooks, sessionAffinity: o.sessionAffinity, replicaId: systemRng().u64() | 1n,
    };
    const r = SelectionCore.tryNewLocal(cfg, coreOptions);
    if (!r.ok) { await ingress?.close(); throw r.error; }
    const core = r.core;
    for (const w of core.warnings) o.logger.warn({}, w);
    const routerId = core.replicaId;
    let replica: ReplicaSync | null = null;
    if (o.replicaSyncPort !== null) {
      try {
        replica = await ReplicaSync.start({
          port: o.replicaSyncPort, peers: o.replicaSyncPeers, routerId, affinity: o.sessionAffinity !== null, logger: o.logger,
          applyLifecycle: (e) => core.applyReplicaEvent(e),
          applyAffinity: (e) => core.applyAffinityEvent({
            modelName: e.model_name, routingGroup: e.routing_group, sessionId: e.session_id, workerId: e.worker_id,
            dpRank: e.dp_rank, sequence: e.sequence, writerId: e.writer_id,
          }),
        });
      } catch (err) {
        await ingress?.close();
        throw new ConfigError([err instanceof SelectionError ? `--replica-sync-peers: ${err.message}`
          : `--replica-sync-port: cannot bind tcp://*:${o.replicaSyncPort}: ${(err as Error).message}`]);
      }
      const rs = replica;
      hooks.onLifecycle = (ev) => rs.publishLifecycle(ev);
      hooks.onAffinity = (ev) => rs.publishAffinity({
        model_name: ev.modelName, routing_group: ev.routingGroup, session_id: ev.sessionId, worker_id: ev.workerId,
        dp_rank: ev.dpRank, sequence: ev.sequence, writer_id: ev.writerId,
      });
    }
    if (o.indexerPeers.length > 0) await recoverFromPeers(core, o.indexerPeers, o.logger);
    ingress?.setIndexerReady();
    return new SelectionService(core, o, { replica, ingress });
  }
}

/**
 * Start-up recovery (api §7.2): wait ~1 s (slow joiners), then `GET <url>/dump` from each peer in
 * order (10 s timeout) until one answers; load its partitions. Never fails the start: no
 * reachable peer or a bad dump logs a warning and the service starts empty.
 */
export async function recoverFromPeers(core: SelectionCore, peers: readonly string[], logger: Logger,
  delayMs: number = LIMITS.recoveryDelayMs): Promise<boolean> {
  await new Promise((r) => setTimeout(r, delayMs));
  for (const url of peers) {
    try {
      const res = await fetch(`${url.replace(/\/+$/, '')}/dump`, { signal: AbortSignal.timeout(LIMITS.recoveryTimeoutMs) });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const body = parseJson(await res.text());
      if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new Error('dump is not an object');
      const dump: Record<string, { block_size: number; events: RouterEvent[] }> = {};
      for (const [key, v] of Object.entries(body as Record<string, unknown>)) {
        const part = v as { block_size?: unknown; events?: unknown; error?: unknown };
        if (part.error !== undefined) { logger.warn({ peer: url, partition: key, error: part.error }, 'peer dump partition failed; skipped'); continue; }
        if (typeof part.block_size !== 'number' || !Array.isArray(part.events)) throw new Error(`partition ${key}: bad shape`);
        dump[key] = { block_size: part.block_size, events: (part.events as unknown[]).map(normalizeEvent) };
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

const big = (v: unknown): bigint => (typeof v === 'bigint' ? v : BigInt(v as number));

/** A RouterEvent from JSON (numbers or bigints) with u64 fields as bigint. */
function normalizeEvent(raw: unknown): RouterEvent {
  const e = raw as { worker_id: unknown; storage_tier?: RouterEvent['storage_tier']; event: { event_id?: unknown; dp_rank?: unknown; data: unknown } };
  const d = e.event.data as RouterEvent['event']['data'] | Record<string, never>;
  let data: RouterEvent['event']['data'];
  if (d === 'cleared') data = 'cleared';
  else if (typeof d === 'object' && d !== null && 'stored' in d) {
    const st = (d as { stored: { parent_hash: unknown; start_position?: unknown; blocks: { block_hash: unknown; tokens_hash: unknown }[] } }).stored;
    data = { stored: { parent_hash: st.parent_hash == null ? null : big(st.parent_hash), start_position: null,
      blocks: st.blocks.map((b) => ({ block_hash: big(b.block_hash), tokens_hash: big(b.tokens_hash), mm_extra_info: null })) } };
  } else if (typeof d === 'object' && d !== null && 'removed' in d) {
    data = { removed: { block_hashes: (d as { removed: { block_hashes: unknown[] } }).removed.block_hashes.map(big) } };
  } else throw new Error('unknown event data');
  return { worker_id: big(e.worker_id), storage_tier: e.storage_tier ?? 'device',
    event: { event_id: Number(e.event.event_id ?? 0), dp_rank: Number(e.event.dp_rank ?? 0), data } };
}


/**
 * The running service: every SelectionApi method (delegating to the core), the replica peer
 * routes, and shutdown. After shutdown, mutations and selections fail
 * `selection service is shutting down`; delete still works.
 */
export class SelectionService implements ServiceApi {
  readonly core: SelectionCore;
  private readonly timer: ReturnType<typeof setInterval>;
  private closed: Promise<void> | null = null;
  private readonly replica: ReplicaSync | null;
  private readonly ingress: IngressHandle | null;

  constructor(core: SelectionCore, private readonly options: ServiceOptions,
    attached: { replica: ReplicaSync | null; ingress: IngressHandle | null }) {
    this.core = core;
    this.replica = attached.replica;
    this.ingress = attached.ingress;
    this.timer = setInterval(() => {
      try { core.maintain(); } catch (err) { options.logger.error({ err }, 'maintenance failed'); }
    }, 1000);
    this.timer.unref();
  }

  get shuttingDown(): boolean { return this.core.shuttingDown; }
  /** The replica-sync port, when enabled. */
  get replicaSyncPort(): number | null { return this.options.replicaSyncPort; }

  upsertWorker(req: unknown): WorkerRecord { return this.core.upsertWorker(req); }
  patchWorker(workerId: bigint, patch: unknown): WorkerRecord { return this.core.patchWorker(workerId, patch); }
  deleteWorker(workerId: bigint): WorkerRecord { return this.core.deleteWorker(workerId); }
  listWorkers(filter?: FilterQuery): WorkerRecord[] { return this.core.listWorkers(filter); }
  ready(): ReadyResponse { return this.core.ready(); }
  select(req: unknown, opts?: SelectOptions): Promise<SelectResponse> { return this.core.select(req, opts); }
  selectAndReserve(req: unknown, opts?: SelectOptions): Promise<SelectResponse> { return this.core.selectAndReserve(req, opts); }
  createReservation(req: unknown): Promise<ReservationResponse> { return this.core.createReservation(req); }
  prefillComplete(id: string): StatusOk { return this.core.prefillComplete(id); }
  addOutputBlock(id: string, body: unknown): StatusOk { return this.core.addOutputBlock(id, body); }
  freeReservation(id: string): StatusOk { return this.core.freeReservation(id); }
  loads(filter?: FilterQuery): ModelLoadResponse[] { return this.core.loads(filter); }
  potentialLoads(req: unknown): PotentialLoad[] { return this.core.potentialLoads(req); }
  overlapScores(req: unknown): OverlapScoresResponse { return this.core.overlapScores(req); }
  dump(): DumpResponse { return this.core.dump(); }

  registerReplicaPeer(endpoint: string): { created: boolean } {
    if (!this.replica) throw replicaSyncDisabled();
    return this.replica.register(endpoint);
  }

  deregisterReplicaPeer(endpoint: string): void {
    if (!this.replica) throw replicaSyncDisabled();
    this.replica.deregister(endpoint);
  }

  listReplicaPeers(): string[] { return this.replica ? this.replica.list() : []; }

  /** Replica-sync counters (null when replica sync is off). */
  replicaStats(): ReplicaSync['stats'] | null { return this.replica?.stats ?? null; }

  /** KV-event ingress counters of one worker, or of all (null without the ZMQ ingress or listeners). */
  ingressStats(): WorkerIngestStats[] | null;
  ingressStats(workerId: bigint): WorkerIngestStats | null;
  ingressStats(workerId?: bigint): WorkerIngestStats[] | WorkerIngestStats | null {
    if (!this.ingress) return null;
    return workerId === undefined ? this.ingress.stats() : this.ingress.stats(workerId);
  }

  /** Idempotent: stop selections (queued ones fail), close listeners, sockets and timers. */
  shutdown(): Promise<void> {
    if (this.closed) return this.closed;
    this.core.shutdown();
    clearInterval(this.timer);
    this.closed = (async () => {
      await this.replica?.close();
      await this.ingress?.close();
    })();
    return this.closed;
  }
}

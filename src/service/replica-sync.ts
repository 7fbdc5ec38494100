/**
 * Replica sync over a ZeroMQ mesh (Dynamo `lib/kv-router/src/services/common/replica_sync.rs`):
 * one PUB bound at `tcp://*:<port>`, one SUB per peer endpoint (static `--replica-sync-peers`
 * plus `POST /replica_sync/register_peer`; replica-peers.ts). On top of Dynamo's best-effort
 * events, anti-entropy (replica-anti-entropy.ts) repairs whatever the mesh loses, and every
 * dropped message is counted by reason (replica-drops.ts).
 *
 * Send path: local admissions, prefill completions (also repeated) and frees, bindings, and the
 * anti-entropy messages are encoded and queued in publish order (bounds: 100,000 lifecycle, 4,096
 * binding, 10,000 anti-entropy; full = the newest dropped and counted); a pump hands them to the
 * PUB, whose per-subscriber queue holds `--replica-sync-send-hwm` messages (ZMQ drops the newest
 * beyond it; the receiver counts those as `lost`). Receive path: frames are checked (two frames,
 * known topic), decoded, own messages dropped, losses counted against the peer's digest, then
 * queued (100,000 lifecycle and anti-entropy together, in arrival order; 4,096 binding) and
 * applied in batches of at most 256 per turn of the event loop.
 */
import * as zmq from 'zeromq';
import { ConfigError, LIMITS } from '../core/config/config.js';
import type { AffinityEvent, LifecycleEvent } from '../core/wire/events.js';
import { SelectionError, invalidZmqEndpoint, peerNotFound } from '../core/errors.js';
import type { EndpointPolicy } from '../core/options.js';
import { AFFINITY_TOPIC, LIFECYCLE_TOPIC, decodeAffinityEvent, decodeReplicaEvent, encodeAffinityEvent, encodeReplicaEvent } from './replica-wire.js';
import { REPAIR_TOPIC, decodeRepair, encodeRepair, type RepairBody, type RepairMessage } from './replica-repair-wire.js';
import { validateZmqEndpoint } from './zmq-endpoint.js';
import { BoundedQueue } from './bounded-queue.js';
import { MESH_SOCKET_OPTIONS, PeerSockets } from './replica-peers.js';
import { AntiEntropy, type RepairHost, type RepairStats } from './replica-anti-entropy.js';
import { PeerViews, type MeshState } from './replica-views.js';
import { Tombstones } from './replica-tombstones.js';
import { ReplicaDrops } from './replica-drops.js';
import type { Logger } from './logger.js';
import { resolveReplicaLimits, type ReplicaSyncLimits } from './replica-limits.js';

export { REPLICA_MAX_MESSAGE_BYTES } from './replica-peers.js';
export type { ReplicaSyncLimits } from './replica-limits.js';

/** Counters of the mesh (for logs and tests). */
export interface ReplicaStats {
  sent: number; sendDropped: number; received: number; applied: number; ownDropped: number;
  rejected: number; malformed: number; receiveDropped: number; lost: number;
}

export interface ReplicaSyncOptions {
  port: number;
  peers: readonly string[];
  affinity: boolean;
  logger: Logger;
  /** The core: its replica id, bookings and receive rules. */
  host: RepairHost;
  /** Apply a peer's binding event (affinity on). */
  applyAffinity?(e: AffinityEvent): boolean;
  /** `--allowed-endpoints`: a peer outside it is refused (422); null = every peer. */
  endpointPolicy?: EndpointPolicy | null;
  limits?: Partial<ReplicaSyncLimits>;
  /** Whether a worker is registered here (schedulable): the mesh forms only then (absent: always). */
  workersReady?(): boolean;
}

/** Everything the metrics read of the mesh. */
export interface ReplicaMetrics {
  stats: ReplicaStats;
  drops: Iterable<{ direction: 'sent' | 'received'; reason: string; count: number }>;
  repair: RepairStats;
  tombstones: { size: number; evictions: number };
  peers: { endpoint: string; up: boolean }[];
  mesh: MeshState;
}

type Topic = typeof LIFECYCLE_TOPIC | typeof AFFINITY_TOPIC | typeof REPAIR_TOPIC;
type Inbound = { t: 'lifecycle'; e: LifecycleEvent; from: bigint } | { t: 'repair'; m: RepairMessage; gap: boolean };

export class ReplicaSync {
  readonly stats: ReplicaStats = { sent: 0, sendDropped: 0, received: 0, applied: 0, ownDropped: 0, rejected: 0, malformed: 0, receiveDropped: 0, lost: 0 };
  readonly limits: Readonly<ReplicaSyncLimits>;
  readonly antiEntropy: AntiEntropy;
  private readonly pub: zmq.Publisher;
  private readonly peers: PeerSockets;
  private readonly views: PeerViews;
  private readonly drops: ReplicaDrops;
  private readonly caps: Record<Topic, number> = {
    [LIFECYCLE_TOPIC]: LIMITS.replicaLifecycleQueue, [AFFINITY_TOPIC]: LIMITS.replicaAffinityQueue, [REPAIR_TOPIC]: LIMITS.replicaRepairQueue,
  };
  private readonly outbox = new BoundedQueue<[Topic, Buffer]>(LIMITS.replicaLifecycleQueue + LIMITS.replicaAffinityQueue + LIMITS.replicaRepairQueue);
  private readonly queued: Record<Topic, number> = { [LIFECYCLE_TOPIC]: 0, [AFFINITY_TOPIC]: 0, [REPAIR_TOPIC]: 0 };
  /** Lifecycle and binding messages queued for the PUB so far (a digest tells peers, who count what they missed). */
  private readonly published = { lifecycle: 0, affinity: 0 };
  private repairSeq = 0;
  private readonly inbound = new BoundedQueue<Inbound>(LIMITS.replicaLifecycleQueue);
  private readonly inAffinity = new BoundedQueue<AffinityEvent>(LIMITS.replicaAffinityQueue);
  private readonly timer: ReturnType<typeof setInterval>;
  private soon: ReturnType<typeof setTimeout> | null = null;
  private pumping = false;
  private applying = false;
  private closed = false;

  private constructor(private readonly o: ReplicaSyncOptions) {
    const { limits, problems } = resolveReplicaLimits(o.limits ?? {});
    if (problems.length > 0) throw new ConfigError(problems);
    this.limits = Object.freeze(limits);
    const me = o.host.replicaId, clock = o.host.clock, interval = this.limits.digestIntervalMs;
    this.pub = new zmq.Publisher({ ...MESH_SOCKET_OPTIONS, sendTimeout: 0, sendHighWaterMark: this.limits.sendHwm });
    this.drops = new ReplicaDrops(o.logger, clock);
    this.views = new PeerViews(me, clock, () => 3 * interval, this.limits.readyTimeoutSecs * 1000);
    const tombstones = new Tombstones(clock, { ttlSecs: this.limits.tombstoneTtlSecs, maxEntries: this.limits.maxTombstones, maxBytes: LIMITS.replicaTombstoneMaxBytes });
    this.antiEntropy = new AntiEntropy(o.host, this.views, tombstones, this.drops, (m) => this.sendRepair(m), () => interval);
    this.peers = new PeerSockets({
      topics: o.affinity ? [LIFECYCLE_TOPIC, AFFINITY_TOPIC, REPAIR_TOPIC] : [LIFECYCLE_TOPIC, REPAIR_TOPIC],
      receiveHwm: this.limits.receiveHwm, logger: o.logger, onMessage: (ep, frames) => this.arrived(ep, frames),
    });
    this.antiEntropy.onPeerHeard = () => this.digestSoon();
    // a peer that just subscribed gets a digest at once, not an interval later
    this.pub.events.on('handshake', () => this.digestSoon());
    this.timer = setInterval(() => this.tick(), interval);
    this.timer.unref();
  }

  /** Binds the PUB, connects a SUB to each static peer and starts receiving. */
  static async start(o: ReplicaSyncOptions): Promise<ReplicaSync> {
    const r = new ReplicaSync(o);
    try {
      for (const p of o.peers) r.register(p); // an invalid peer fails before the port is bound
      await r.pub.bind(`tcp://*:${o.port}`);
    } catch (err) {
      await r.close();
      throw err;
    }
    return r;
  }

  /** Register a peer PUB endpoint; `created` false when already present. Invalid endpoint: 400; outside `--allowed-endpoints`: 422. */
  register(endpoint: string): { created: boolean } {
    const reason = validateZmqEndpoint(endpoint);
    if (reason !== null) throw invalidZmqEndpoint(endpoint, reason);
    const refused = this.o.endpointPolicy?.(endpoint) ?? null;
    if (refused !== null) throw new SelectionError('SEL_ENDPOINT_NOT_ALLOWED', `endpoint: ${refused}`);
    return { created: this.peers.add(endpoint) };
  }

  /** Disconnect a peer; 404 `peer not found` when not registered. */
  deregister(endpoint: string): void {
    const reason = validateZmqEndpoint(endpoint);
    if (reason !== null) throw invalidZmqEndpoint(endpoint, reason);
    if (!this.peers.remove(endpoint)) throw peerNotFound();
  }

  list(): string[] { return this.peers.list(); }

  /** Queue a local lifecycle event for the peers (a free also leaves a tombstone here). */
  publishLifecycle(event: LifecycleEvent): void {
    if (event.kind === 'free') this.antiEntropy.freedHere(event.requestId);
    if (this.enqueue(LIFECYCLE_TOPIC, encodeReplicaEvent({ routerId: this.o.host.replicaId, event }))) this.published.lifecycle++;
  }

  /** Queue a local binding event. */
  publishAffinity(ev: AffinityEvent): void {
    if (!this.o.affinity) return;
    if (this.enqueue(AFFINITY_TOPIC, encodeAffinityEvent(ev))) this.published.affinity++;
  }

  /** A DELETE here of an id this replica does not hold: peers that hold it free it. */
  publishUnknownFree(id: string): void { this.antiEntropy.unknownFreed(id); }

  /** A worker was registered or changed here: what its bookings on peers need is asked again (see AntiEntropy.workersChanged). */
  workersChanged(): void { this.antiEntropy.workersChanged(); }

  /** The start-up mesh state `/ready` reports (meshed for good once formed or timed out). */
  meshState(): MeshState {
    return this.views.mesh(this.peers.list(), (ep) => this.peers.connected(ep), (s) => {
      if (s.timedOut) {
        this.o.logger.warn({ waiting: s.waiting, waitedSecs: this.limits.readyTimeoutSecs },
          `replica mesh not formed after ${this.limits.readyTimeoutSecs} s; ready anyway: ${s.waiting.join('; ')}`);
      } else this.o.logger.info({ peers: this.peers.list().length }, 'replica mesh formed: every peer connected both ways, first digest exchange done');
    }, this.o.workersReady?.() ?? true);
  }

  metrics(): ReplicaMetrics {
    return {
      stats: this.stats, drops: this.drops.counts(), repair: this.antiEntropy.stats,
      tombstones: { size: this.antiEntropy.tombstones.size, evictions: this.antiEntropy.tombstones.evictions },
      peers: this.peers.list().map((endpoint) => ({ endpoint, up: this.peers.connected(endpoint) && this.views.atEndpoint(endpoint) !== undefined })),
      mesh: this.meshState(),
    };
  }

  /** An extra digest 100 ms from now (its subscription has to reach the PUB first); one at a time. */
  private digestSoon(): void {
    if (this.soon !== null || this.closed) return;
    this.soon = setTimeout(() => { this.soon = null; this.tick(); }, 100);
    this.soon.unref();
  }

  private tick(): void {
    if (this.closed) return;
    try {
      this.antiEntropy.publishDigest(this.published);
      this.views.prune(30 * this.limits.digestIntervalMs + 60_000);
      this.meshState();
    } catch (err) {
      this.o.logger.error({ err }, 'replica anti-entropy round failed');
    }
  }

  private sendRepair(body: RepairBody): void {
    const payload = encodeRepair({ ...body, from: this.o.host.replicaId, seq: this.repairSeq++ } as RepairMessage);
    this.antiEntropy.countBytes('sent', payload.length);
    this.enqueue(REPAIR_TOPIC, payload);
  }

  /** Queues a message; false (dropped and counted) when its topic's bound is reached. */
  private enqueue(topic: Topic, payload: Buffer): boolean {
    if (this.closed) return false;
    if (this.queued[topic] >= this.caps[topic]) { this.stats.sendDropped++; this.drops.sent('send_queue_full'); return false; }
    this.queued[topic]++;
    this.outbox.push([topic, payload]);
    if (!this.pumping) void this.pump();
    return true;
  }

  private async pump(): Promise<void> {
    this.pumping = true;
    try {
      while (this.outbox.length > 0 && !this.closed) {
        const [topic, payload] = this.outbox.shift()!;
        this.queued[topic]--;
        try {
          await this.pub.send([topic, payload]);
          this.stats.sent++;
        } catch (err) {
          this.stats.sendDropped++;
          this.drops.sent('send_error');
          if (!this.closed) this.o.logger.debug({ err }, 'replica sync send failed');
        }
      }
    } finally {
      this.pumping = false;
    }
  }

  /** One message from a peer endpoint, in that peer's order: checked, decoded, counted, queued. */
  private arrived(endpoint: string, frames: Buffer[]): void {
    this.stats.received++;
    const me = this.o.host.replicaId;
    if (frames.length !== 2) { this.refuse('malformed'); return; }
    const topic = frames[0].toString();
    let item: Inbound;
    try {
      if (topic === LIFECYCLE_TOPIC) {
        const { routerId, event } = decodeReplicaEvent(frames[1]);
        if (routerId === me) { this.refuse('own'); return; }
        this.views.arrived(routerId, 'lifecycle');
        item = { t: 'lifecycle', e: event, from: routerId };
      } else if (topic === AFFINITY_TOPIC && this.o.affinity) {
        const e = decodeAffinityEvent(frames[1]);
        if (e.writerId === me) { this.refuse('own'); return; }
        this.views.arrived(e.writerId, 'affinity');
        if (!this.inAffinity.push(e)) { this.refuse('receive_queue_full'); return; }
        this.schedule();
        return;
      } else if (topic === REPAIR_TOPIC) {
        const m = decodeRepair(frames[1]);
        if (m.from === me) { this.refuse('own'); return; }
        this.antiEntropy.countBytes('received', frames[1].length);
        const digest = m.kind === 'digest' ? { lifecycle: m.sentLifecycle, affinity: m.sentAffinity } : null;
        const { gap, lost } = this.views.repairArrived(m.from, endpoint, m.seq, digest, this.o.affinity);
        if (lost > 0) { this.stats.lost += lost; this.drops.received('lost', lost); }
        item = { t: 'repair', m, gap };
      } else { this.refuse('malformed'); return; }
    } catch {
      this.refuse('malformed');
      return;
    }
    if (!this.inbound.push(item)) { this.refuse('receive_queue_full'); return; }
    this.schedule();
  }

  private refuse(reason: 'malformed' | 'own' | 'receive_queue_full'): void {
    if (reason === 'malformed') this.stats.malformed++;
    else if (reason === 'own') this.stats.ownDropped++;
    else this.stats.receiveDropped++;
    this.drops.received(reason);
  }

  private schedule(): void {
    if (!this.applying && !this.closed) { this.applying = true; setImmediate(() => this.applyBatch()); }
  }

  private applyBatch(): void {
    this.applying = false;
    if (this.closed) return;
    for (let n = 0; n < LIMITS.replicaBatchMax && (this.inbound.length > 0 || this.inAffinity.length > 0); n++) {
      try {
        if (this.inAffinity.length > 0) {
          const e = this.inAffinity.shift()!;
          if (this.o.applyAffinity?.(e)) this.stats.applied++; else this.stats.rejected++;
          continue;
        }
        const it = this.inbound.shift()!;
        if (it.t === 'repair') this.antiEntropy.receive(it.m, it.gap);
        else if (this.antiEntropy.applyLifecycle(it.e, it.from)) this.stats.applied++;
        else this.stats.rejected++;
      } catch (err) {
        this.stats.rejected++;
        this.drops.received('apply_error');
        this.o.logger.warn({ err }, 'replica message failed to apply');
      }
    }
    if (this.inbound.length > 0 || this.inAffinity.length > 0) this.schedule();
  }

  /** Close every socket (the port is released). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    if (this.soon !== null) clearTimeout(this.soon);
    this.antiEntropy.book.detach();
    const bound = this.pub.lastEndpoint;
    if (bound) await unbindReleased(this.pub, bound, this.o.logger);
    this.pub.close();
    await this.peers.close();
  }
}

/** How long {@link unbindReleased} waits for ZMQ to close the listening socket. */
const UNBIND_CLOSE_TIMEOUT_MS = 2000;

/**
 * Unbind `endpoint` (the resolved one: ZMQ cannot unbind a wildcard) and wait until ZMQ's I/O
 * thread has closed the listening socket, so a service restarted in this process can bind the
 * port at once. Neither close() nor an awaited unbind() does that: both only ask the I/O thread,
 * and on a loaded machine a bind right after failed with EADDRINUSE 3-8 times in 100. The socket's monitor
 * reports the listener's close (`close` with its address); past the timeout we log and go on.
 */
async function unbindReleased(sock: zmq.Publisher, endpoint: string, logger: Logger): Promise<void> {
  let done!: () => void;
  const closed = new Promise<void>((resolve) => { done = resolve; });
  const onClose = (e: { address: string }): void => { if (e.address === endpoint) done(); };
  sock.events.on('close', onClose);
  const timer = setTimeout(() => {
    logger.warn({ endpoint, timeoutMs: UNBIND_CLOSE_TIMEOUT_MS }, 'replica sync port not reported closed after unbind; it may stay bound briefly');
    done();
  }, UNBIND_CLOSE_TIMEOUT_MS);
  try {
    await sock.unbind(endpoint);
    await closed;
  } catch {
    // nothing bound there any more (or the socket is closing): nothing to wait for
  } finally {
    clearTimeout(timer);
    sock.events.off('close', onClose);
  }
}

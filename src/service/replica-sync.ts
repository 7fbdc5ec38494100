/**
 * Replica sync over a ZeroMQ mesh (Dynamo `lib/kv-router/src/services/common/replica_sync.rs`): one PUB bound at `tcp://*:<port>`, one SUB connected
 * to every peer (static `--replica-sync-peers` plus `POST /replica_sync/register_peer`).
 * Best effort: bounded queues that drop the newest when full, no ordering, acks, replay or resync.
 *
 * Send path: local admissions, prefill completions (also repeated) and frees are encoded and
 * queued (100,000); a pump sends them. Receive path: frames are checked (two frames, known
 * topic), decoded, own events dropped by `router_id` / `writer_id`, queued (100,000 lifecycle,
 * 4,096 affinity) and applied in batches of at most 256 events per turn of the event loop.
 */
import * as zmq from 'zeromq';
import { LIMITS } from '../core/config/config.js';
import type { AffinityEvent, LifecycleEvent } from '../core/wire/events.js';
import { SelectionError, invalidZmqEndpoint, peerNotFound } from '../core/errors.js';
import type { EndpointPolicy } from '../core/options.js';
import {
  AFFINITY_TOPIC, LIFECYCLE_TOPIC, decodeAffinityEvent, decodeReplicaEvent, encodeAffinityEvent, encodeReplicaEvent,
} from './replica-wire.js';
import { validateZmqEndpoint } from './zmq-endpoint.js';
import { BoundedQueue } from './bounded-queue.js';
import type { Logger } from './logger.js';

/** Counters of the mesh (for logs and tests). */
export interface ReplicaStats {
  sent: number; sendDropped: number; received: number; applied: number; ownDropped: number;
  rejected: number; malformed: number; receiveDropped: number;
}

export interface ReplicaSyncOptions {
  port: number;
  peers: readonly string[];
  routerId: bigint;
  affinity: boolean;
  logger: Logger;
  /** Apply a peer's lifecycle event; false when the core's receive rules dropped it. */
  applyLifecycle(e: LifecycleEvent): boolean;
  /** Apply a peer's binding event (affinity on). */
  applyAffinity?(e: AffinityEvent): boolean;
  /** `--allowed-endpoints`: a peer outside it is refused (422); null = every peer. */
  endpointPolicy?: EndpointPolicy | null;
}

/**
 * Largest replica-sync message accepted (ZMQ_MAXMSGSIZE): an admission event carries one 8-byte
 * hash per prompt block, so 64 MiB is far above any real event; a larger frame drops the peer's
 * connection instead of being buffered.
 */
export const REPLICA_MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

const socketOptions = {
  linger: 0, reconnectInterval: 100, reconnectMaxInterval: 5000, tcpKeepalive: 1,
  heartbeatInterval: 5000, heartbeatTimeout: 15000, heartbeatTimeToLive: 15000,
};

export class ReplicaSync {
  readonly stats: ReplicaStats = { sent: 0, sendDropped: 0, received: 0, applied: 0, ownDropped: 0, rejected: 0, malformed: 0, receiveDropped: 0 };
  private readonly pub: zmq.Publisher;
  private readonly sub: zmq.Subscriber;
  private readonly peers = new Set<string>();
  /** One send queue in publish order; each topic keeps its own bound (100,000 / 4,096). */
  private readonly outbox = new BoundedQueue<[typeof LIFECYCLE_TOPIC | typeof AFFINITY_TOPIC, Buffer]>(LIMITS.replicaLifecycleQueue + LIMITS.replicaAffinityQueue);
  private readonly queued = { [LIFECYCLE_TOPIC]: 0, [AFFINITY_TOPIC]: 0 };
  private readonly inLifecycle = new BoundedQueue<LifecycleEvent>(LIMITS.replicaLifecycleQueue);
  private readonly inAffinity = new BoundedQueue<AffinityEvent>(LIMITS.replicaAffinityQueue);
  private pumping = false;
  private applying = false;
  private closed = false;
  private receiving: Promise<void> | null = null;

  private constructor(private readonly o: ReplicaSyncOptions) {
    this.pub = new zmq.Publisher({ ...socketOptions, sendTimeout: 0 });
    this.sub = new zmq.Subscriber({ ...socketOptions, receiveTimeout: -1, maxMessageSize: REPLICA_MAX_MESSAGE_BYTES });
  }

  /** Binds the PUB, connects the SUB to the static peers and starts receiving. */
  static async start(o: ReplicaSyncOptions): Promise<ReplicaSync> {
    const r = new ReplicaSync(o);
    try {
      r.sub.subscribe(LIFECYCLE_TOPIC);
      if (o.affinity) r.sub.subscribe(AFFINITY_TOPIC);
      for (const p of o.peers) r.register(p); // an invalid peer fails before the port is bound
      await r.pub.bind(`tcp://*:${o.port}`);
    } catch (err) {
      r.pub.close();
      r.sub.close();
      throw err;
    }
    r.receiving = r.receiveLoop();
    return r;
  }

  /** Register a peer PUB endpoint; `created` false when already present. Invalid endpoint: 400; outside `--allowed-endpoints`: 422. */
  register(endpoint: string): { created: boolean } {
    const reason = validateZmqEndpoint(endpoint);
    if (reason !== null) throw invalidZmqEndpoint(endpoint, reason);
    const refused = this.o.endpointPolicy?.(endpoint) ?? null;
    if (refused !== null) throw new SelectionError('SEL_ENDPOINT_NOT_ALLOWED', `endpoint: ${refused}`);
    if (this.peers.has(endpoint)) return { created: false };
    this.sub.connect(endpoint);
    this.peers.add(endpoint);
    return { created: true };
  }

  /** Disconnect a peer; 404 `peer not found` when not registered. */
  deregister(endpoint: string): void {
    const reason = validateZmqEndpoint(endpoint);
    if (reason !== null) throw invalidZmqEndpoint(endpoint, reason);
    if (!this.peers.has(endpoint)) throw peerNotFound();
    this.peers.delete(endpoint);
    try { this.sub.disconnect(endpoint); } catch { /* already gone */ }
  }

  list(): string[] { return [...this.peers].sort(); }

  /** Queue a local lifecycle event for the peers. */
  publishLifecycle(event: LifecycleEvent): void {
    this.enqueue(LIFECYCLE_TOPIC, encodeReplicaEvent({ routerId: this.o.routerId, event }));
  }

  /** Queue a local binding event. */
  publishAffinity(ev: AffinityEvent): void {
    if (!this.o.affinity) return;
    this.enqueue(AFFINITY_TOPIC, encodeAffinityEvent(ev));
  }

  /** Queues a message; when the lifecycle bound is reached the newest is dropped (best effort). */
  private enqueue(topic: typeof LIFECYCLE_TOPIC | typeof AFFINITY_TOPIC, payload: Buffer): void {
    if (this.closed) return;
    const cap = topic === AFFINITY_TOPIC ? LIMITS.replicaAffinityQueue : LIMITS.replicaLifecycleQueue;
    if (this.queued[topic] >= cap) { this.stats.sendDropped++; return; }
    this.queued[topic]++;
    this.outbox.push([topic, payload]);
    if (!this.pumping) void this.pump();
  }

  private async pump(): Promise<void> {
    this.pumping = true;
    try {
      while (this.outbox.length > 0 && !this.closed) {
        const [topic, payload] = this.outbox.shift() as [typeof LIFECYCLE_TOPIC, Buffer];
        this.queued[topic]--;
        try {
          await this.pub.send([topic, payload]);
          this.stats.sent++;
        } catch (err) {
          this.stats.sendDropped++;
          if (!this.closed) this.o.logger.debug({ err }, 'replica sync send failed');
        }
      }
    } finally {
      this.pumping = false;
    }
  }

  private async receiveLoop(): Promise<void> {
    while (!this.closed) {
      let frames: Buffer[];
      try {
        frames = await this.sub.receive();
      } catch (err) {
        if (this.closed) return;
        this.o.logger.debug({ err }, 'replica sync receive failed; retrying');
        await new Promise((r) => setTimeout(r, 100));
        continue;
      }
      this.stats.received++;
      if (frames.length !== 2) { this.stats.malformed++; continue; }
      const topic = frames[0].toString();
      try {
        if (topic === LIFECYCLE_TOPIC) {
          const { routerId, event } = decodeReplicaEvent(frames[1]);
          if (routerId === this.o.routerId) { this.stats.ownDropped++; continue; }
          if (!this.inLifecycle.push(event)) { this.stats.receiveDropped++; continue; }
        } else if (topic === AFFINITY_TOPIC && this.o.affinity) {
          const e = decodeAffinityEvent(frames[1]);
          if (e.writerId === this.o.routerId) { this.stats.ownDropped++; continue; }
          if (!this.inAffinity.push(e)) { this.stats.receiveDropped++; continue; }
        } else { this.stats.malformed++; continue; }
      } catch {
        this.stats.malformed++;
        continue;
      }
      if (!this.applying) { this.applying = true; setImmediate(() => this.applyBatch()); }
    }
  }

  private applyBatch(): void {
    this.applying = false;
    let n = 0;
    while (n < LIMITS.replicaBatchMax && (this.inLifecycle.length > 0 || this.inAffinity.length > 0)) {
      try {
        if (this.inAffinity.length > 0) {
          const e = this.inAffinity.shift() as AffinityEvent;
          if (this.o.applyAffinity?.(e)) this.stats.applied++; else this.stats.rejected++;
        } else {
          const e = this.inLifecycle.shift() as LifecycleEvent;
          if (this.o.applyLifecycle(e)) this.stats.applied++; else this.stats.rejected++;
        }
      } catch (err) {
        this.stats.rejected++;
        this.o.logger.warn({ err }, 'replica event failed to apply');
      }
      n++;
    }
    if (this.inLifecycle.length > 0 || this.inAffinity.length > 0) { this.applying = true; setImmediate(() => this.applyBatch()); }
  }

  /** Close both sockets (the port is released). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // close() releases the port asynchronously; an awaited unbind (of the resolved endpoint: ZMQ
    // cannot unbind a wildcard) releases it before we return, so a restarted service can bind it
    const bound = this.pub.lastEndpoint;
    if (bound) await this.pub.unbind(bound).catch(() => {});
    this.pub.close();
    this.sub.close();
    await this.receiving?.catch(() => {});
  }
}

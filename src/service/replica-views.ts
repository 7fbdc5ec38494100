/**
 * What this replica knows of each peer replica it hears, by the peer's `router_id`: the endpoint
 * its messages come from, when its last digest arrived and which replicas it hears, how many
 * lifecycle and binding messages it published against how many arrived (the difference is
 * `lost`), its anti-entropy sequence (a gap voids the repair round in progress), and whether the
 * first exchange with it is done. From these: the mesh state `/ready` waits for after start-up.
 *
 * Loss is counted where messages arrive (before any queue), so a message that arrived and was
 * then refused is counted once, under its own reason. A peer's first digest is the baseline: what
 * it published before this replica subscribed is not a loss.
 */
import type { Clock } from '../core/random.js';

/** One peer replica (one incarnation: a restarted process has a new `router_id`). */
export interface PeerView {
  readonly routerId: bigint;
  endpoint: string | null;
  /** Clock ms of the last digest's final chunk (-Infinity before the first). */
  lastDigestAt: number;
  /** The replicas this peer hears (from its last digest). */
  hears: ReadonlySet<bigint>;
  /** Messages it said it had published (lifecycle, binding), at its last digest; null before the first. */
  sent: { lifecycle: number; affinity: number } | null;
  /** Messages from it that arrived since its last digest. */
  received: { lifecycle: number; affinity: number };
  /** The last anti-entropy sequence number seen (null before the first). */
  seq: number | null;
  /** Repair replies (lists) from it reconciled since the first exchange began (again: {@link PeerViews.resync}). */
  repaired: number;
  /** The first exchange with it is done (its digest matched, or was repaired and compared again). */
  synced: boolean;
  /** The digest round being received: its number, whether a message went missing in it, its owner groups seen, a mismatch. */
  round: { n: number; gap: boolean; mentioned: Set<string>; mismatch: boolean };
}

/** The mesh state `/ready` reports while replica sync is on. */
export interface MeshState {
  /**
   * A worker is registered here, and every configured peer is connected both ways and the first
   * exchange since the last registration is done (or the wait timed out).
   */
  meshed: boolean;
  /** True once the start-up wait ran out before the mesh formed (`meshed` then true too). */
  timedOut: boolean;
  /** Why not yet, one line per peer endpoint (empty when meshed). */
  waiting: string[];
}

export class PeerViews {
  private readonly views = new Map<bigint, PeerView>();
  private latched: MeshState | null = null;
  private readonly startedAt: number;
  /** When the mesh was first asked about with a worker registered here (the ready timeout counts from then). */
  private waitingSince = NaN;

  constructor(private readonly me: bigint, private readonly clock: Clock, private readonly windowMs: () => number,
    private readonly readyTimeoutMs: number) {
    this.startedAt = clock.now();
  }

  get(routerId: bigint): PeerView {
    let v = this.views.get(routerId);
    if (v === undefined) {
      v = {
        routerId, endpoint: null, lastDigestAt: -Infinity, hears: new Set(), sent: null, received: { lifecycle: 0, affinity: 0 },
        seq: null, repaired: 0, synced: false, round: { n: -1, gap: false, mentioned: new Set(), mismatch: false },
      };
      this.views.set(routerId, v);
    }
    return v;
  }

  /** A lifecycle or binding message from `routerId` arrived. */
  arrived(routerId: bigint, topic: 'lifecycle' | 'affinity'): void { this.get(routerId).received[topic]++; }

  /**
   * An anti-entropy message arrived: returns whether one before it went missing (its sequence
   * skipped), and for a digest the lifecycle and binding messages lost since the previous one
   * (`affinity` only when this replica subscribes to bindings).
   */
  repairArrived(routerId: bigint, endpoint: string, seq: number, digest: { lifecycle: number; affinity: number } | null,
    affinity: boolean): { gap: boolean; lost: number } {
    const v = this.get(routerId);
    v.endpoint = endpoint;
    const gap = v.seq !== null && seq !== v.seq + 1;
    v.seq = seq;
    let lost = 0;
    if (digest !== null) {
      if (v.sent !== null) {
        lost += Math.max(0, digest.lifecycle - v.sent.lifecycle - v.received.lifecycle);
        if (affinity) lost += Math.max(0, digest.affinity - v.sent.affinity - v.received.affinity);
      }
      v.sent = { ...digest };
      v.received = { lifecycle: 0, affinity: 0 };
    }
    return { gap, lost };
  }

  /** Peers whose digest arrived within the liveness window (their ids go into this replica's digests). */
  heard(): bigint[] {
    const since = this.clock.now() - this.windowMs();
    return [...this.views.values()].filter((v) => v.lastDigestAt >= since).map((v) => v.routerId);
  }

  /** The most recently heard peer at `endpoint`, if heard within the liveness window. */
  atEndpoint(endpoint: string): PeerView | undefined {
    let best: PeerView | undefined;
    const since = this.clock.now() - this.windowMs();
    for (const v of this.views.values()) {
      if (v.endpoint === endpoint && v.lastDigestAt >= since && (best === undefined || v.lastDigestAt > best.lastDigestAt)) best = v;
    }
    return best;
  }

  /** Forgets peers silent for `forgetMs` (a dead incarnation), keeping memory bounded. */
  prune(forgetMs: number): void {
    const before = this.clock.now() - forgetMs;
    for (const [id, v] of this.views) {
      const last = Number.isFinite(v.lastDigestAt) ? v.lastDigestAt : this.startedAt;
      if (last < before) this.views.delete(id);
    }
  }

  /**
   * A worker was registered or changed here: until the mesh has formed, every peer's first exchange
   * starts again. One done before held nothing for that worker (a peer's bookings on a worker not
   * registered here are not fetched), so a replica whose workers arrive after its peers' first
   * digests would otherwise be ready while missing their bookings.
   */
  resync(): void {
    if (this.latched) return;
    for (const v of this.views.values()) { v.synced = false; v.repaired = 0; }
  }

  /**
   * The start-up mesh state over the configured peer endpoints: each connected, heard, hearing
   * this replica, first exchange done. Once meshed (or timed out) it stays so; `onLatch` is
   * called that once. Not before `workersReady` (a worker is registered here): an exchange before
   * that compared nothing. The ready timeout counts from the first call with it true.
   */
  mesh(endpoints: readonly string[], connected: (ep: string) => boolean, onLatch: (s: MeshState) => void, workersReady = true): MeshState {
    if (this.latched) return this.latched;
    const waiting: string[] = [];
    if (!workersReady) waiting.push('no worker registered here yet');
    else if (Number.isNaN(this.waitingSince)) this.waitingSince = this.clock.now();
    for (const ep of endpoints) {
      const v = this.atEndpoint(ep);
      if (!connected(ep)) waiting.push(`${ep}: not connected`);
      else if (v === undefined) waiting.push(`${ep}: connected, no digest received yet`);
      else if (!v.hears.has(this.me)) waiting.push(`${ep}: does not hear this replica yet`);
      else if (!v.synced) waiting.push(`${ep}: first digest exchange in progress`);
    }
    const timedOut = workersReady && waiting.length > 0 && this.clock.now() - this.waitingSince >= this.readyTimeoutMs;
    if (waiting.length > 0 && !timedOut) return { meshed: false, timedOut: false, waiting };
    this.latched = { meshed: true, timedOut, waiting: [] };
    onLatch(timedOut ? { meshed: true, timedOut, waiting } : this.latched);
    return this.latched;
  }
}

/**
 * Session affinity (Dynamo `lib/kv-router/src/services/selection/affinity.rs`): one table per partition binding a session id to the worker (and
 * optionally the DP rank) that served it, for as long as requests keep arriving within the TTL.
 *
 * A booking first *acquires* the session: a new (or idle-expired) session yields an `init`
 * hold the booking commits with the worker it dispatched to; a bound session yields its target
 * and a lease; a session another booking is initializing yields `wait` (retry when it settles);
 * a full table yields `full` (route unpinned). `commit` binds: in `hard` mode a bound session
 * dispatched elsewhere is an error (400) and the binding is dropped so the next request
 * re-initializes; in `soft` mode the binding follows the dispatch (a worker-only binding stays
 * worker-only). While any lease is held the binding never expires; the idle TTL starts when the
 * last lease is released.
 *
 * Bindings carry a version `(sequence, writer_id)` (higher wins) so replicas can exchange them:
 * every commit, rebind and lease release is published through `publish`, and peers' bindings
 * enter through {@link SessionAffinityTable.applyRemote} with the rules of Dynamo `lib/kv-router/src/services/selection/affinity.rs`.
 * Single-threaded and clock-injected; the host calls `reap` periodically (every min(ttl, 30 s)).
 */
import { LIMITS } from '../config/config.js';
import { SelectionError, sessionIdTooLong } from '../errors.js';
import type { Clock } from '../random.js';

export type AffinityMode = 'hard' | 'soft';

/** Where a session is bound: a worker, and a rank unless worker-only. */
export interface AffinityTarget { workerId: bigint; dpRank: number | null }

/** Replication order: higher sequence wins, ties broken by writer id. */
export interface AffinityVersion { sequence: bigint; writerId: bigint }

export interface AffinityTableOptions {
  ttlSecs: number;
  mode: AffinityMode;
  clock: Clock;
  /** This replica's writer id (the process's replica id). */
  writerId: bigint;
  /** First version sequence (wall-clock nanoseconds in a service, 1 in tests). */
  sequenceStart: bigint;
  maxEntries?: number;
  maxSessionIdBytes?: number;
  /** Receives every binding this table publishes (commit, rebind, lease release). */
  publish?: (sessionId: string, target: AffinityTarget, version: AffinityVersion) => void;
}

/** A live use of a bound session, owned by a reservation row. */
export interface AffinityLease { readonly sessionId: string; readonly revision: number; version: AffinityVersion; active: boolean }

export type Hold =
  | { kind: 'init'; sessionId: string; revision: number }
  | { kind: 'bound'; target: AffinityTarget; lease: AffinityLease }
  | { kind: 'wait'; settled: Promise<void> }
  | { kind: 'full' };

type Entry =
  | { kind: 'init'; revision: number; wake: (() => void)[] }
  | { kind: 'bound'; target: AffinityTarget; revision: number; version: AffinityVersion; leases: number; idleDeadline: number };

export type ApplyOutcome = 'inserted' | 'refreshed' | 'replaced_expired' | 'replaced_newer'
  | 'ignored_initializing' | 'ignored_conflict' | 'rejected_session_id' | 'rejected_capacity';

const cmpVersion = (a: AffinityVersion, b: AffinityVersion): number =>
  a.sequence !== b.sequence ? (a.sequence < b.sequence ? -1 : 1) : a.writerId < b.writerId ? -1 : a.writerId > b.writerId ? 1 : 0;
const sameTarget = (a: AffinityTarget, b: AffinityTarget): boolean => a.workerId === b.workerId && a.dpRank === b.dpRank;
const utf8 = new TextEncoder();

export class SessionAffinityTable {
  readonly mode: AffinityMode;
  readonly ttlMs: number;
  private readonly o: AffinityTableOptions;
  private readonly entries = new Map<string, Entry>();
  private readonly maxEntries: number;
  private readonly maxIdBytes: number;
  private nextRevision = 1;
  private nextSequence: bigint;

  constructor(o: AffinityTableOptions) {
    this.o = o;
    this.mode = o.mode;
    this.ttlMs = o.ttlSecs * 1000;
    this.maxEntries = o.maxEntries ?? LIMITS.sessionAffinityMaxEntries;
    this.maxIdBytes = o.maxSessionIdBytes ?? LIMITS.sessionIdMaxBytes;
    this.nextSequence = o.sequenceStart;
  }

  /** Bindings and initializations held. */
  get size(): number { return this.entries.size; }

  /** 400 when a session id is longer than the limit (UTF-8 bytes). */
  validateSessionId(sessionId: string): void {
    const n = sessionId.length * 3 <= this.maxIdBytes ? sessionId.length : utf8.encode(sessionId).length;
    if (n > this.maxIdBytes) throw sessionIdTooLong(n, this.maxIdBytes);
  }

  private now(): number { return this.o.clock.now(); }
  private idle(e: Entry, now: number): boolean { return e.kind === 'bound' && e.leases === 0 && e.idleDeadline <= now; }
  private nextVersion(): AffinityVersion { return { sequence: this.nextSequence++, writerId: this.o.writerId }; }

  /** Acquires a session for a booking (see the file comment). */
  acquire(sessionId: string): Hold {
    this.validateSessionId(sessionId);
    const e = this.entries.get(sessionId);
    if (e === undefined || this.idle(e, this.now())) {
      if (e === undefined && this.entries.size >= this.maxEntries) return { kind: 'full' };
      const revision = this.nextRevision++;
      this.entries.set(sessionId, { kind: 'init', revision, wake: [] });
      return { kind: 'init', sessionId, revision };
    }
    if (e.kind === 'init') return { kind: 'wait', settled: new Promise<void>((resolve) => e.wake.push(resolve)) };
    e.leases++;
    return { kind: 'bound', target: e.target, lease: { sessionId, revision: e.revision, version: e.version, active: true } };
  }

  /** The bound target without taking a lease (query-only selection). */
  query(sessionId: string): AffinityTarget | undefined {
    this.validateSessionId(sessionId);
    const e = this.entries.get(sessionId);
    return e?.kind === 'bound' && !this.idle(e, this.now()) ? e.target : undefined;
  }

  /**
   * Binds a hold to the worker rank the booking was dispatched to and returns the lease the
   * reservation owns. Hard mode: a bound session dispatched elsewhere throws 400 and the
   * binding is dropped. `full` holds return null (routed unpinned).
   */
  commit(hold: Hold, dispatched: { workerId: bigint; dpRank: number }): AffinityLease | null {
    if (hold.kind === 'full' || hold.kind === 'wait') return null;
    if (hold.kind === 'init') {
      const e = this.entries.get(hold.sessionId);
      if (e?.kind !== 'init' || e.revision !== hold.revision) {
        throw new SelectionError('SEL_AFFINITY_REJECTED', `session ${hold.sessionId} affinity initialization changed`);
      }
      const target = { workerId: dispatched.workerId, dpRank: dispatched.dpRank };
      const version = this.nextVersion();
      this.entries.set(hold.sessionId, { kind: 'bound', target, revision: hold.revision, version, leases: 1, idleDeadline: this.now() + this.ttlMs });
      for (const w of e.wake) w();
      this.o.publish?.(hold.sessionId, target, version);
      return { sessionId: hold.sessionId, revision: hold.revision, version, active: true };
    }
    const { target, lease } = hold;
    if (this.mode === 'soft') {
      const rebound = { workerId: dispatched.workerId, dpRank: target.dpRank === null ? null : dispatched.dpRank };
      const e = this.entries.get(lease.sessionId);
      if (!sameTarget(rebound, target) && e?.kind === 'bound' && e.revision === lease.revision
        && cmpVersion(e.version, lease.version) === 0 && sameTarget(e.target, target)) {
        e.target = rebound;
        e.version = this.nextVersion();
        lease.version = e.version;
      }
      this.o.publish?.(lease.sessionId, e?.kind === 'bound' ? e.target : target, lease.version);
      return lease;
    }
    if (target.workerId !== dispatched.workerId || (target.dpRank !== null && target.dpRank !== dispatched.dpRank)) {
      this.invalidate(lease);
      const where = target.workerId !== dispatched.workerId
        ? `worker ${target.workerId}, not ${dispatched.workerId}` : `DP rank ${target.dpRank}, not ${dispatched.dpRank}`;
      throw new SelectionError('SEL_AFFINITY_REJECTED', `session ${lease.sessionId} is bound to ${where}`);
    }
    this.o.publish?.(lease.sessionId, target, lease.version);
    return lease;
  }

  /** An uncommitted hold whose booking failed: an initialization is dropped, a lease released. */
  abandon(hold: Hold): void {
    if (hold.kind === 'bound') { this.release(hold.lease); return; }
    if (hold.kind !== 'init') return;
    const e = this.entries.get(hold.sessionId);
    if (e?.kind === 'init' && e.revision === hold.revision) {
      this.entries.delete(hold.sessionId);
      for (const w of e.wake) w();
    }
  }

  /** Releases a lease: the last one starts the idle TTL, and the binding is re-published. */
  release(lease: AffinityLease): void {
    if (!lease.active) return;
    lease.active = false;
    const e = this.entries.get(lease.sessionId);
    if (e?.kind !== 'bound' || e.revision !== lease.revision || e.leases === 0) return;
    e.leases--;
    if (cmpVersion(e.version, lease.version) !== 0) return;
    e.idleDeadline = this.now() + this.ttlMs;
    this.o.publish?.(lease.sessionId, e.target, e.version);
  }

  /** Drops the binding a lease holds (its worker departed); a newer binding is left alone. */
  invalidate(lease: AffinityLease): void {
    if (!lease.active) return;
    const e = this.entries.get(lease.sessionId);
    if (e?.kind === 'bound' && e.revision === lease.revision && cmpVersion(e.version, lease.version) === 0) {
      this.entries.delete(lease.sessionId);
      lease.active = false;
      return;
    }
    this.release(lease);
  }

  /** Applies a peer's binding (Dynamo `lib/kv-router/src/services/selection/affinity.rs` apply rules). */
  applyRemote(sessionId: string, target: AffinityTarget, version: AffinityVersion): ApplyOutcome {
    try { this.validateSessionId(sessionId); } catch { return 'rejected_session_id'; }
    if (version.sequence >= this.nextSequence) this.nextSequence = version.sequence + 1n;
    const now = this.now();
    const e = this.entries.get(sessionId);
    const fresh = (): Entry => ({ kind: 'bound', target: { ...target }, revision: this.nextRevision++, version, leases: 0, idleDeadline: now + this.ttlMs });
    if (e === undefined) {
      if (this.entries.size >= this.maxEntries) return 'rejected_capacity';
      this.entries.set(sessionId, fresh());
      return 'inserted';
    }
    if (e.kind === 'init') return 'ignored_initializing';
    if (this.idle(e, now)) { this.entries.set(sessionId, fresh()); return 'replaced_expired'; }
    const c = cmpVersion(version, e.version);
    if (sameTarget(e.target, target) && c >= 0) {
      e.version = version;
      e.idleDeadline = now + this.ttlMs;
      return 'refreshed';
    }
    if (c > 0) {
      e.target = { ...target };
      e.version = version;
      e.idleDeadline = now + this.ttlMs;
      return 'replaced_newer';
    }
    return 'ignored_conflict';
  }

  /** Removes idle bindings past their TTL; returns how many. */
  reap(): number {
    const now = this.now();
    let n = 0;
    for (const [id, e] of this.entries) if (this.idle(e, now)) { this.entries.delete(id); n++; }
    return n;
  }

  /** Live leases on a session (0 for an initialization; undefined when absent). For tests. */
  leaseCount(sessionId: string): number | undefined {
    const e = this.entries.get(sessionId);
    return e === undefined ? undefined : e.kind === 'init' ? 0 : e.leases;
  }
}

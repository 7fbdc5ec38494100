/**
 * The health of one rank's KV-event feed (the states of {@link KvFeedState}), from three signals:
 * - **transport**: the subscriber's connection reports (connecting, connected, disconnected and
 *   retrying, error such as an unresolvable host);
 * - **expectation**: a booking on the rank whose prefill completed with uncached complete blocks
 *   makes the engine publish `BlockStored` for them, so a batch must follow; none within the
 *   silence window (after the prefill completed) means the feed does not reach the index;
 * - **shape**: stores whose block size differs from the worker's (counted by the applier).
 *
 * Pure and clock-free: every call takes `now` (milliseconds) and the rank's last batch time, so
 * unit tests drive it in virtual time. {@link FeedHealth.evaluate} returns the log lines due,
 * at most one warning per episode (an episode ends when the feed is up again, with one info
 * line if it was warned about) and one warning for the first shape mismatch.
 */
import type { KvFeedState } from '../../core/index/feed.js';
import type { TransportState } from './zmtp-subscriber.js';

/** A log line the ingress writes for a rank (it adds worker, rank and endpoint). */
export interface HealthNotice {
  level: 'warn' | 'info';
  msg: string;
  state: KvFeedState;
  reason?: string;
  /** Seconds the condition has lasted, when it is a duration. */
  forSecs?: number;
}

/** The default health window (`--kv-feed-silence-secs`), seconds. */
export const DEFAULT_KV_FEED_SILENCE_SECS = 30;

/** `connected` and `live` count as up (`select_service_kv_feed_up` = 1). */
export const feedUp = (s: KvFeedState): boolean => s === 'connected' || s === 'live';

export class FeedHealth {
  /** The connection state the reports add up to: `connecting` only before the first connection. */
  private transport: TransportState = 'connecting';
  private everConnected = false;
  /** When the feed last stopped being connected (or started): the episode's start. */
  private downSince: number;
  private reason: string | null = null;
  /** The oldest unmet expectation: when its prefill completed, and when its booking was made. */
  private expectedAt: number | null = null;
  private expectedSince = 0;
  /** The current episode was warned about (reset when the feed is up again). */
  private warned = false;
  private mismatchWarned = false;

  constructor(private readonly windowMs: number, now: number) { this.downSince = now; }

  /**
   * A transport report. A retry (`connecting`) after a drop or a failure keeps `disconnected` or
   * `error`; connecting or losing the connection forgets pending expectations.
   */
  setTransport(report: TransportState, now: number, reason?: string): void {
    if (report === 'error' || report === 'disconnected') this.reason = reason ?? this.reason;
    if (report === 'connected') {
      this.reason = null;
      this.everConnected = true;
    }
    const next = report === 'connecting' && (this.everConnected || this.transport === 'error') ? this.transport : report;
    if (next === this.transport) return;
    if (this.transport === 'connected') this.downSince = now;
    this.transport = next;
    this.expectedAt = null;
  }

  /**
   * A booking made at `bookedAt` completed prefill with uncached blocks at `now`. Met at once by
   * a batch since the booking; else pending until a batch arrives (ignored while not connected).
   */
  expect(now: number, bookedAt: number, lastBatchAt: number | null): void {
    if (this.transport !== 'connected' || (lastBatchAt !== null && lastBatchAt >= bookedAt)) return;
    if (this.expectedAt !== null && !this.met(lastBatchAt)) return; // the oldest unmet one stays
    this.expectedAt = now;
    this.expectedSince = bookedAt;
  }

  /** The state now (pure). */
  state(now: number, lastBatchAt: number | null): KvFeedState {
    if (this.transport !== 'connected') return this.transport;
    if (this.expectedAt !== null && !this.met(lastBatchAt) && now - this.expectedAt >= this.windowMs) return 'silent';
    return lastBatchAt === null ? 'connected' : 'live';
  }

  /** Why the feed is in `error`, or why it last failed while `disconnected`. */
  get failure(): string | null {
    return this.transport === 'error' || this.transport === 'disconnected' ? this.reason : null;
  }

  /**
   * Advances the episode bookkeeping and returns the log lines due now: a warning when the rank
   * is in `error` (at once), still `connecting` or `disconnected` one window after it began, or
   * `silent`; an info line when a warned episode ends; a warning on the first shape mismatch.
   */
  evaluate(now: number, lastBatchAt: number | null, mismatches: number): HealthNotice[] {
    const out: HealthNotice[] = [];
    if (this.expectedAt !== null && this.met(lastBatchAt)) this.expectedAt = null;
    const state = this.state(now, lastBatchAt);
    const lasted = now - this.downSince;
    if (feedUp(state)) {
      if (this.warned) out.push({ level: 'info', msg: 'KV event feed recovered', state });
      this.warned = false;
    } else if (!this.warned) {
      let msg: string | null = null;
      if (state === 'error') msg = 'KV event feed failed';
      else if (state === 'connecting' && lasted >= this.windowMs) msg = 'KV event feed not connected';
      else if (state === 'disconnected' && lasted >= this.windowMs) msg = 'KV event feed disconnected';
      else if (state === 'silent') msg = 'KV event feed silent: bookings completed prefill but no KV events arrived';
      if (msg !== null) {
        this.warned = true;
        const n: HealthNotice = { level: 'warn', msg, state };
        if (this.reason !== null && state !== 'silent') n.reason = this.reason;
        if (state === 'connecting' || state === 'disconnected') n.forSecs = Math.round(lasted / 100) / 10;
        if (state === 'silent') n.forSecs = Math.round((now - (this.expectedAt as number)) / 100) / 10;
        out.push(n);
      }
    }
    if (mismatches > 0 && !this.mismatchWarned) {
      this.mismatchWarned = true;
      out.push({ level: 'warn', msg: 'KV events with a block size other than the worker\'s: they can never match a selection', state });
    }
    return out;
  }

  private met(lastBatchAt: number | null): boolean {
    return lastBatchAt !== null && lastBatchAt >= this.expectedSince;
  }
}

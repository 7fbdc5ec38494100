/**
 * One worker rank's KV-event listener: a SUB connection of its own (zmtp-subscriber.ts),
 * subscribed to every topic, to the engine's bound PUB; live messages are
 * `[topic, seq (8 bytes BE), msgpack batch]` (vLLM's `ZmqEventPublisher`,
 * vllm/distributed/kv_events.py).
 *
 * Sequence rules, per listener: a batch with seq <= watermark is stale and dropped; a first seq
 * above 0, or a jump, is a gap. With a replay endpoint the gap is filled through replay.ts
 * (every replied batch goes through the same watermark check, so nothing is applied twice);
 * without one the missing batches are counted as lost. Only decodable batches move the
 * watermark or open a gap: garbage with a random seq cannot poison the stream.
 *
 * Robustness: wrong frame counts, short seq frames, oversize messages, undecodable or mis-shaped
 * payloads, and batches naming a `data_parallel_rank` the worker does not have are dropped and
 * counted; a lost connection is retried (100 ms doubling to 5 s) for as
 * long as the listener lives, and every change of its state reaches `onTransport`. Until the
 * ingress signals that start-up recovery finished, the connection is up but not read: the
 * subscriber reads {@link LISTENER_READ_AHEAD_MESSAGES} ahead and then pauses the socket; the
 * publisher queues behind it up to its high-water mark and drops beyond, which later shows as a
 * gap.
 */
import { ZmtpSubscriber, type TransportState } from './zmtp-subscriber.js';
import { KvDecodeError, type DecodedBatch, type KvBatchDecoder } from './decode.js';
import type { BatchApplier } from './apply.js';
import type { IngestCounters } from './stats.js';
import type { Pacer } from './pacer.js';
import { readSeq } from './frames.js';
import { replay } from './replay.js';
import type { Logger } from '../logger.js';

/**
 * Messages read ahead of the listener. Small on purpose: the socket is read on the main thread
 * (libzmq read in its own I/O thread), so reading far ahead only moves work into bursts that
 * delay selections (measured: bench/RESULTS.md, KV ingestion). Behind this queue the kernel's
 * socket buffer and the publisher's own high-water mark (vLLM: 100,000 messages) hold the rest,
 * and a publisher at its mark drops, which shows here as a gap.
 */
export const LISTENER_READ_AHEAD_MESSAGES = 32;
/** ... and at most this many bytes of them. */
export const LISTENER_READ_AHEAD_BYTES = 1024 * 1024;

export interface ListenerOptions {
  workerId: bigint;
  dpRank: number;
  endpoint: string;
  replayEndpoint: string | null;
  counters: IngestCounters;
  applier: BatchApplier;
  /** Shared by the ingress: decode and apply run back to back, with no await in between. */
  decoder: KvBatchDecoder;
  pacer: Pacer;
  /** Resolves when start-up recovery finished. */
  ready: Promise<void>;
  replayIdleTimeoutMs: number;
  /** Messages above this size are dropped (counted as `oversizeMessages`). */
  maxMessageBytes: number;
  /** Whether `rank` is one of the worker's ranks now (a batch naming another is dropped). */
  ownsRank(rank: number): boolean;
  logger: Logger;
  /** Every change of the connection's state. */
  onTransport?(state: TransportState, reason: string | null): void;
}

export class KvListener {
  readonly dpRank: number;
  readonly endpoint: string;
  readonly replayEndpoint: string | null;
  /** Highest sequence number applied; null before the first batch. */
  watermark: bigint | null = null;
  private readonly sub: ZmtpSubscriber;
  private readonly abort = new AbortController();
  private readonly stopped: Promise<void>;
  private loop: Promise<void> = Promise.resolve();

  /** Starts connecting; throws (with nothing left open) for an endpoint a subscriber cannot connect to. */
  constructor(private readonly o: ListenerOptions) {
    this.dpRank = o.dpRank;
    this.endpoint = o.endpoint;
    this.replayEndpoint = o.replayEndpoint;
    const c = o.counters;
    this.sub = new ZmtpSubscriber(o.endpoint, {
      maxMessageBytes: o.maxMessageBytes, queueMessages: LISTENER_READ_AHEAD_MESSAGES, queueBytes: LISTENER_READ_AHEAD_BYTES,
      onState: (state, reason) => o.onTransport?.(state, reason),
      onOversize: () => { c.oversizeMessages++; },
      onProtocolError: (reason) => {
        c.protocolErrors++;
        o.logger.warn({ workerId: String(o.workerId), dpRank: o.dpRank, endpoint: o.endpoint, reason }, 'KV event publisher broke the protocol; reconnecting');
      },
    });
    this.stopped = new Promise((resolve) => this.abort.signal.addEventListener('abort', () => resolve(), { once: true }));
  }

  /** Starts receiving (after `ready`). */
  start(): void { this.loop = this.run(); }

  /** The connection to the publisher, and why it last failed (null while connected). */
  get transport(): TransportState { return this.sub.state; }
  get transportError(): string | null { return this.sub.lastError; }

  get closed(): boolean { return this.abort.signal.aborted; }

  /** Stops the listener: nothing is applied after this returns; the promise settles when the loop exited. */
  close(): Promise<void> {
    if (!this.closed) {
      this.abort.abort();
      this.sub.close();
    }
    return this.loop;
  }

  private async run(): Promise<void> {
    await Promise.race([this.o.ready, this.stopped]);
    while (!this.closed) {
      let frames: Buffer[];
      try {
        frames = await this.sub.receive();
      } catch {
        return; // only a closed subscriber rejects
      }
      await this.o.pacer.turn();
      if (this.closed) return;
      await this.onMessage(frames);
      this.sub.release(frames); // decoding copied what the batch holds: the frames' memory is reused
    }
  }

  private async onMessage(frames: Buffer[]): Promise<void> {
    const dropped = this.o.counters.droppedFrames;
    if (frames.length !== 3) { dropped.frameCount++; return; }
    const seq = readSeq(frames[1]);
    if (seq === null) { dropped.seqLength++; return; }
    await this.offer(seq, frames[2], false);
  }

  /** Watermark check, gap handling, decode and apply of one live or replayed batch. */
  private async offer(seq: bigint, payload: Uint8Array, replayed: boolean): Promise<void> {
    const c = this.o.counters;
    if (this.closed) return; // a replay may resume after close(): nothing is applied past it
    if (this.watermark !== null && seq <= this.watermark) { if (!replayed) c.staleBatches++; return; }
    let batch = this.decode(payload);
    if (batch === null) return;
    let expected = this.watermark === null ? 0n : this.watermark + 1n;
    if (seq > expected && !replayed) {
      c.gaps++;
      if (this.replayEndpoint !== null) {
        await this.fillGap(expected);
        if (this.closed || (this.watermark !== null && seq <= this.watermark)) return; // delivered by the replay
        expected = this.watermark === null ? 0n : this.watermark + 1n;
        batch = this.decode(payload); // the replay reused the decoder's buffers
        if (batch === null) return;
      }
    }
    if (seq > expected) c.batchesLost += Number(seq - expected);
    if (batch.dpRank !== null && batch.dpRank !== this.dpRank && !this.o.ownsRank(batch.dpRank)) {
      // in sequence, so the watermark moves on; its events are dropped, not indexed under a stranger rank
      c.droppedFrames.unknownRank++;
      this.watermark = seq;
      return;
    }
    try {
      // in slices of the pacer's turn: a long batch lets selections in between (pacer.ts)
      const pacer = this.o.pacer;
      let next = this.o.applier.applyFrom(batch, this.dpRank, 0, pacer.spent);
      while (next >= 0) {
        await pacer.resume();
        if (this.closed) return; // nothing is applied past close()
        next = this.o.applier.applyFrom(batch, this.dpRank, next, pacer.spent);
      }
    } catch (err) {
      c.applyErrors++;
      this.o.logger.error({ workerId: String(this.o.workerId), dpRank: this.dpRank, seq: String(seq), err }, 'KV event batch failed to apply');
    }
    this.watermark = seq;
    if (replayed) c.batchesReplayed++;
  }

  private decode(payload: Uint8Array): DecodedBatch | null {
    try {
      return this.o.decoder.decode(payload);
    } catch (err) {
      const d = this.o.counters.droppedFrames;
      if (err instanceof KvDecodeError && err.code === 'bad_batch') d.badShape++; else d.undecodable++;
      return null;
    }
  }

  private async fillGap(start: bigint): Promise<void> {
    const c = this.o.counters;
    c.replays++;
    const r = await replay({
      endpoint: this.replayEndpoint as string, start, idleTimeoutMs: this.o.replayIdleTimeoutMs, signal: this.abort.signal,
      onBatch: async (seq, payload) => {
        await this.o.pacer.turn();
        await this.offer(seq, payload, true);
      },
      onBadReply: (reason) => { c.droppedFrames[reason]++; },
    });
    if (!r.completed && !this.closed) {
      c.replayFailures++;
      this.o.logger.warn({ workerId: String(this.o.workerId), dpRank: this.dpRank, start: String(start), replayed: r.batches }, 'KV event replay incomplete');
    }
  }
}

/**
 * One worker rank's KV-event listener (api §7.3, wire note "Consumer rules"): a ZMQ SUB,
 * subscribed to every topic, connected to the engine's bound PUB; live messages are
 * `[topic, seq (8 bytes BE), msgpack batch]`.
 *
 * Sequence rules, per listener: a batch with seq <= watermark is stale and dropped; a first seq
 * above 0, or a jump, is a gap. With a replay endpoint the gap is filled through replay.ts
 * (every replied batch goes through the same watermark check, so nothing is applied twice);
 * without one the missing batches are counted as lost. Only decodable batches move the
 * watermark or open a gap: garbage with a random seq cannot poison the stream.
 *
 * Robustness: wrong frame counts, short seq frames, undecodable or mis-shaped payloads are
 * dropped and counted; receive errors back off (10 ms doubling to 5 s) and retry for as long
 * as the listener lives. Until the ingress signals that start-up recovery finished, the socket
 * is connected but not read: ZMQ queues up to `receiveHighWaterMark` messages (the bounded
 * buffer; beyond it the publisher drops, which later shows as a gap).
 */
import * as zmq from 'zeromq';
import { KvDecodeError, type DecodedBatch, type KvBatchDecoder } from './decode.js';
import type { BatchApplier } from './apply.js';
import type { IngestCounters } from './stats.js';
import type { Pacer } from './pacer.js';
import { readSeq } from './frames.js';
import { replay } from './replay.js';
import { isIpv6Endpoint } from '../zmq-endpoint.js';
import type { Logger } from '../logger.js';

/** Receive queue while not ready / while busy: vLLM's own publisher high-water mark. */
export const LISTENER_RECEIVE_HWM = 100_000;
const BACKOFF_BASE_MS = 10, BACKOFF_MAX_MS = 5000;

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
  logger: Logger;
}

export class KvListener {
  readonly dpRank: number;
  readonly endpoint: string;
  readonly replayEndpoint: string | null;
  /** Highest sequence number applied; null before the first batch. */
  watermark: bigint | null = null;
  private readonly sub: zmq.Subscriber;
  private readonly abort = new AbortController();
  private readonly stopped: Promise<void>;
  private loop: Promise<void> = Promise.resolve();

  /** Creates the SUB and connects it; throws (with nothing left open) when ZMQ rejects the endpoint. */
  constructor(private readonly o: ListenerOptions) {
    this.dpRank = o.dpRank;
    this.endpoint = o.endpoint;
    this.replayEndpoint = o.replayEndpoint;
    this.sub = new zmq.Subscriber({
      linger: 0, reconnectInterval: 100, reconnectMaxInterval: 5000, receiveHighWaterMark: LISTENER_RECEIVE_HWM,
      tcpKeepalive: 1, ipv6: isIpv6Endpoint(o.endpoint),
    });
    try {
      this.sub.connect(o.endpoint);
      this.sub.subscribe();
    } catch (err) {
      this.sub.close();
      throw err;
    }
    this.stopped = new Promise((resolve) => this.abort.signal.addEventListener('abort', () => resolve(), { once: true }));
  }

  /** Starts receiving (after `ready`). */
  start(): void { this.loop = this.run(); }

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
    let failures = 0;
    while (!this.closed) {
      let frames: Buffer[];
      try {
        frames = await this.sub.receive();
        failures = 0;
      } catch (err) {
        if (this.closed) return;
        this.o.counters.receiveErrors++;
        const wait = Math.min(BACKOFF_BASE_MS * 2 ** Math.min(failures++, 8), BACKOFF_MAX_MS);
        this.o.logger.warn({ workerId: String(this.o.workerId), dpRank: this.dpRank, err: (err as Error).message, retryMs: wait }, 'KV event receive failed');
        await new Promise((r) => setTimeout(r, wait));
        continue;
      }
      await this.o.pacer.turn();
      if (this.closed) return;
      await this.onMessage(frames);
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
    try {
      this.o.applier.apply(batch, this.dpRank);
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

/**
 * Gap replay from an engine's replay ROUTER (wire note "Replay"): a fresh DEALER connects,
 * sends `["", start_seq]`, and hands every replied batch to the caller in order until the end
 * marker. Both reply shapes are accepted (see frames.ts). A ROUTER that never answers (a bad
 * request shape gets no reply at all) or stops mid-way ends the replay after `idleTimeoutMs`
 * without a reply; the caller counts it and goes on live.
 *
 * A DEALER per replay rather than one per listener: gaps are rare, and a timed-out replay's late
 * replies then cannot be mistaken for the next replay's.
 */
import * as zmq from 'zeromq';
import { isIpv6Endpoint } from '../zmq-endpoint.js';
import { parseReplayReply, replayRequest } from './frames.js';

export interface ReplayOptions {
  endpoint: string;
  /** First sequence number wanted (the ROUTER sends every buffered batch from it on). */
  start: bigint;
  /** Give up when no reply arrived for this long. */
  idleTimeoutMs: number;
  /** Aborted when the listener closes: the DEALER is closed at once and the replay ends. */
  signal: AbortSignal;
  /** One replied batch, in the order received. */
  onBatch(seq: bigint, payload: Uint8Array): Promise<void>;
  /** A reply of the wrong shape (skipped). */
  onBadReply(reason: 'frameCount' | 'seqLength'): void;
}

/** Outcome: `completed` when the end marker arrived. */
export interface ReplayResult { completed: boolean; batches: number }

/** Runs one replay; never throws for socket or protocol problems (they end it incomplete). */
export async function replay(o: ReplayOptions): Promise<ReplayResult> {
  const dealer = new zmq.Dealer({ linger: 0, receiveTimeout: o.idleTimeoutMs, ipv6: isIpv6Endpoint(o.endpoint) });
  let batches = 0;
  const cancel = (): void => { if (!dealer.closed) dealer.close(); };
  o.signal.addEventListener('abort', cancel, { once: true });
  try {
    dealer.connect(o.endpoint);
    await dealer.send(replayRequest(o.start));
    for (;;) {
      if (o.signal.aborted) return { completed: false, batches };
      let frames: Buffer[];
      try {
        frames = await dealer.receive();
      } catch {
        return { completed: false, batches }; // idle timeout, or the socket was closed
      }
      if (o.signal.aborted) return { completed: false, batches };
      const r = parseReplayReply(frames);
      if (r.kind === 'end') return { completed: true, batches };
      if (r.kind === 'bad') { o.onBadReply(r.reason); continue; }
      batches++;
      await o.onBatch(r.seq, r.payload);
    }
  } catch {
    return { completed: false, batches }; // connect/send failed
  } finally {
    o.signal.removeEventListener('abort', cancel);
    cancel();
  }
}

/**
 * Frame-level helpers of the vLLM/SGLang KV-event transport (wire note "Live messages" and
 * "Replay"): the 8-byte big-endian sequence frame, and the two shapes of replay replies a DEALER
 * receives — `["", seq, payload]` (vLLM <= ~0.25, SGLang) and `["", topic, seq, payload]` (vLLM
 * 0.26 style) — ended by a reply whose seq is all ones (or whose payload is empty).
 */

/** The end-of-replay sequence number (-1 as a signed 64-bit integer). */
export const END_SEQ = 0xffff_ffff_ffff_ffffn;

const EMPTY = new Uint8Array(0);

/** The u64 of an 8-byte big-endian sequence frame, or null when the frame is not 8 bytes. */
export function readSeq(frame: Uint8Array): bigint | null {
  if (frame.length !== 8) return null;
  return new DataView(frame.buffer, frame.byteOffset, 8).getBigUint64(0, false);
}

/** An 8-byte big-endian sequence frame. */
export function seqFrame(seq: bigint): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt.asUintN(64, seq));
  return b;
}

/** The frames a DEALER sends to ask a publisher's ROUTER for every batch from `start` on. */
export function replayRequest(start: bigint): Uint8Array[] { return [EMPTY, seqFrame(start)]; }

/** One reply of a replay. */
export type ReplayReply =
  | { kind: 'batch'; seq: bigint; payload: Uint8Array }
  | { kind: 'end' }
  | { kind: 'bad'; reason: 'frameCount' | 'seqLength' };

/** Classifies the frames a DEALER received during a replay. */
export function parseReplayReply(frames: readonly Uint8Array[]): ReplayReply {
  if (frames.length !== 3 && frames.length !== 4) return { kind: 'bad', reason: 'frameCount' };
  const payload = frames[frames.length - 1];
  const seq = readSeq(frames[frames.length - 2]);
  if (seq === null) return payload.length === 0 ? { kind: 'end' } : { kind: 'bad', reason: 'seqLength' };
  if (seq === END_SEQ || payload.length === 0) return { kind: 'end' };
  return { kind: 'batch', seq, payload };
}

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { END_SEQ, parseReplayReply, readSeq, replayRequest, seqFrame } from '../../../../src/service/kv-events/frames.js';

const E = Buffer.alloc(0), FF = Buffer.alloc(8, 0xff), P = Buffer.from([0x92, 0x00, 0x90]);

test('sequence frames are 8 bytes big-endian, u64-exact', () => {
  assert.equal(readSeq(seqFrame(2n ** 64n - 2n)), 2n ** 64n - 2n);
  assert.equal(readSeq(Buffer.from([0, 0, 0, 0, 0, 0, 1, 2])), 258n);
  assert.equal(readSeq(Buffer.alloc(7)), null);
  assert.equal(readSeq(FF), END_SEQ);
  assert.deepEqual(replayRequest(5n).map((f) => Buffer.from(f).toString('hex')), ['', '0000000000000005']);
});

test('replay replies: both shapes, both end markers, bad shapes', () => {
  assert.deepEqual(parseReplayReply([E, seqFrame(3n), P]), { kind: 'batch', seq: 3n, payload: P });
  assert.deepEqual(parseReplayReply([E, Buffer.from('kv-events'), seqFrame(4n), P]), { kind: 'batch', seq: 4n, payload: P });
  assert.deepEqual(parseReplayReply([E, FF, E]), { kind: 'end' });
  assert.deepEqual(parseReplayReply([E, E, FF, E]), { kind: 'end' });
  assert.deepEqual(parseReplayReply([E, seqFrame(9n), E]), { kind: 'end' }, 'an empty payload ends it too (Dynamo)');
  assert.deepEqual(parseReplayReply([E, P]), { kind: 'bad', reason: 'frameCount' });
  assert.deepEqual(parseReplayReply([E, E, E, E, E]), { kind: 'bad', reason: 'frameCount' });
  assert.deepEqual(parseReplayReply([E, Buffer.alloc(3), P]), { kind: 'bad', reason: 'seqLength' });
});

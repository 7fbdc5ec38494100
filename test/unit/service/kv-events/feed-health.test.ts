/**
 * The KV-feed health state machine in virtual time: every transition the states define, and the
 * log lines it asks for (one warning per episode, one info line on recovery, never one per tick).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FeedHealth, feedUp, type HealthNotice } from '../../../../src/service/kv-events/feed-health.js';

const W = 30_000; // the window, ms

/** Evaluates every second from `from` to `to` (inclusive) and returns all notices. */
function ticks(h: FeedHealth, from: number, to: number, lastBatchAt: number | null = null, mismatches = 0): HealthNotice[] {
  const out: HealthNotice[] = [];
  for (let t = from; t <= to; t += 1000) out.push(...h.evaluate(t, lastBatchAt, mismatches));
  return out;
}
const brief = (ns: HealthNotice[]) => ns.map((n) => `${n.level} ${n.state}: ${n.msg}`);

test('a rank with no publisher stays connecting and is warned about once, one window after it started', () => {
  const h = new FeedHealth(W, 0);
  assert.equal(h.state(0, null), 'connecting');
  assert.deepEqual(ticks(h, 0, W - 1000), [], 'nothing before the window');
  const warned = ticks(h, W, 5 * W);
  assert.deepEqual(brief(warned), ['warn connecting: KV event feed not connected']);
  assert.equal(warned[0].forSecs, 30);
  assert.equal(h.state(5 * W, null), 'connecting');
  assert.equal(feedUp('connecting'), false);
});

test('connected without a batch is `connected`; a batch makes it `live`; both are up; recovery after a warning logs once', () => {
  const h = new FeedHealth(W, 0);
  ticks(h, 0, W); // warned: not connected
  h.setTransport('connected', W + 500);
  assert.equal(h.state(W + 500, null), 'connected');
  assert.deepEqual(brief(h.evaluate(W + 500, null, 0)), ['info connected: KV event feed recovered']);
  assert.equal(h.state(W + 600, W + 550), 'live');
  assert.deepEqual(ticks(h, W + 1000, 4 * W, W + 550), [], 'idle and nothing expected: live, no lines');
  assert.equal(h.state(4 * W, W + 550), 'live');
  assert.ok(feedUp('connected') && feedUp('live'));
});

test('a publisher that stops: `disconnected`, warned once after a window; back to `live` when it returns', () => {
  const h = new FeedHealth(W, 0);
  h.setTransport('connected', 10);
  const last = 20;
  assert.equal(h.state(100, last), 'live');
  h.setTransport('disconnected', 1000, 'connection reset');
  assert.equal(h.state(1000, last), 'disconnected');
  assert.equal(h.failure, 'connection reset');
  assert.deepEqual(ticks(h, 1000, W), [], 'a short drop is not warned about');
  h.setTransport('connecting', W + 100); // retrying
  assert.equal(h.state(W + 100, last), 'disconnected', 'a retry after a drop stays disconnected');
  h.setTransport('disconnected', W + 200, 'connection refused');
  const warned = ticks(h, W + 1000, 3 * W + 1000, last);
  assert.deepEqual(brief(warned), ['warn disconnected: KV event feed disconnected']);
  assert.equal(warned[0].reason, 'connection refused');
  h.setTransport('connected', 4 * W);
  assert.equal(h.state(4 * W, last), 'live', 'a rank that had batches is live again at once');
  assert.equal(h.failure, null);
  assert.deepEqual(brief(h.evaluate(4 * W, last, 0)), ['info live: KV event feed recovered']);
  assert.deepEqual(ticks(h, 4 * W + 1000, 6 * W, last), []);
});

test('bookings with completed prefill and no batch within the window turn the rank `silent`; a batch ends it', () => {
  const h = new FeedHealth(W, 0);
  h.setTransport('connected', 0);
  h.expect(1000, 500, null); // booked at 0.5 s, prefill done at 1 s, nothing ever arrived
  assert.equal(h.state(1000 + W - 1, null), 'connected');
  assert.equal(h.state(1000 + W, null), 'silent');
  assert.equal(feedUp('silent'), false);
  const warned = ticks(h, 1000, 1000 + 3 * W);
  assert.deepEqual(brief(warned), ['warn silent: KV event feed silent: bookings completed prefill but no KV events arrived']);
  h.expect(2 * W, 2 * W - 100, null); // more expectations while silent: no new line
  assert.deepEqual(ticks(h, 2 * W, 3 * W), []);
  const batchAt = 3 * W + 10;
  assert.equal(h.state(batchAt + 1, batchAt), 'live');
  assert.deepEqual(brief(h.evaluate(batchAt + 1, batchAt, 0)), ['info live: KV event feed recovered']);
  assert.deepEqual(ticks(h, batchAt + 1000, batchAt + 3 * W, batchAt), [], 'the expectation was met');
});

test('an expectation is met by a batch that arrived after the booking, even before prefill completion was reported', () => {
  const h = new FeedHealth(W, 0);
  h.setTransport('connected', 0);
  h.expect(5000, 1000, 3000); // booked at 1 s, the blocks arrived at 3 s, prefill reported at 5 s
  assert.equal(h.state(5000 + 2 * W, 3000), 'live');
  h.expect(6000, 4000, 3000); // booked after the last batch: pending
  assert.equal(h.state(6000 + W, 3000), 'silent');
  assert.equal(h.state(6000 + W, 6500), 'live', 'any batch after that booking meets it');
});

test('expectations while not connected are ignored, and a transport change forgets pending ones', () => {
  const h = new FeedHealth(W, 0);
  h.expect(100, 50, null);
  h.setTransport('connected', 200);
  assert.equal(h.state(200 + 2 * W, null), 'connected', 'the expectation from before the connection is gone');
  h.expect(300, 250, null);
  h.setTransport('disconnected', 400);
  h.setTransport('connected', 500);
  assert.equal(h.state(500 + 2 * W, null), 'connected');
});

test('an unresolvable host is `error`, logged at once with the reason, once per episode', () => {
  const h = new FeedHealth(W, 0);
  h.setTransport('error', 50, 'getaddrinfo ENOTFOUND nosuchhost.invalid');
  assert.equal(h.state(50, null), 'error');
  const first = h.evaluate(50, null, 0);
  assert.deepEqual(brief(first), ['warn error: KV event feed failed']);
  assert.equal(first[0].reason, 'getaddrinfo ENOTFOUND nosuchhost.invalid');
  // the subscriber retries: connecting, error, connecting, ... without more lines
  for (let t = 1000; t < 5 * W; t += 1000) {
    h.setTransport(t % 2000 === 0 ? 'connecting' : 'error', t, 'getaddrinfo ENOTFOUND nosuchhost.invalid');
    assert.equal(h.state(t, null), 'error', 'a retry keeps the error until a connection succeeds');
    assert.deepEqual(h.evaluate(t, null, 0), []);
  }
});

test('the first block-size mismatch is warned about once, whatever the state', () => {
  const h = new FeedHealth(W, 0);
  h.setTransport('connected', 0);
  assert.deepEqual(h.evaluate(100, 90, 0), []);
  assert.deepEqual(brief(h.evaluate(200, 190, 1)), ['warn live: KV events with a block size other than the worker\'s: they can never match a selection']);
  assert.deepEqual(ticks(h, 1000, 3 * W, 190, 7), []);
});

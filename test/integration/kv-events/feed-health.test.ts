/**
 * KV-feed health over real sockets, with a short window (`kvFeedSilence`): each state the issue
 * defines, reached the way an operator would meet it, seen in worker records, `/ready`'s
 * `kv_feeds`, the metrics and the log lines (one warning per episode, one info line on recovery).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeEngine } from '../../support/fake-engine.js';
import { batch, storedEvent, tokenRange } from '../../support/kv-batches.js';
import { until, workerBody } from '../../support/kv-service.js';
import { eventually, silentTcpEndpoint, unboundIpcEndpoint } from '../../support/ports.js';
import { value } from '../../support/prom-text.js';
import { SelectionServiceBuilder, type SelectionService } from '../../../src/service/service.js';
import { ConfigError, parseRouterConfig } from '../../../src/core/config/config.js';
import type { KvFeedState } from '../../../src/core/index/feed.js';
import type { Logger } from '../../../src/service/logger.js';

const WINDOW_SECS = 0.4;

interface Line { level: 'info' | 'warn' | 'error' | 'debug'; msg: string; fields: Record<string, unknown> }

type After = { after(fn: () => Promise<void>): void };

/** A logger that keeps every line. */
function recordingLogger(): { logger: Logger; lines: Line[] } {
  const lines: Line[] = [];
  const keep = (level: Line['level']) => (obj: unknown, msg?: string) => { lines.push({ level, msg: msg ?? '', fields: obj as Record<string, unknown> }); };
  return { lines, logger: { info: keep('info'), warn: keep('warn'), error: keep('error'), debug: keep('debug') } };
}

/** A service with KV events on, a short health window (unless `windowSecs` says otherwise) and a recording logger. */
async function healthService(t: After, windowSecs = WINDOW_SECS) {
  const { logger, lines } = recordingLogger();
  const service = await new SelectionServiceBuilder(parseRouterConfig({})).logger(logger).kvFeedSilence(windowSecs).build();
  t.after(() => service.shutdown());
  const feedLines = (workerId: string) => lines.filter((l) => l.fields.workerId === workerId && /KV event feed|block size/.test(l.msg));
  return { service, lines, feedLines };
}

/** {@link healthService} with worker 1 on a fake engine, its feed `connected`. */
async function connectedWorker(t: After) {
  const h = await healthService(t);
  const engine = await FakeEngine.start();
  t.after(async () => engine.close());
  h.service.upsertWorker(workerBody(1, { kv_events_endpoint: engine.endpoint }));
  await engine.waitForSubscribers();
  await waitState(h.service, 1n, 'connected');
  return { ...h, engine };
}

const stateOf = (s: SelectionService, id: bigint, rank = 0): KvFeedState | undefined =>
  s.listWorkers().find((w) => w.worker_id === id)?.kv_events?.find((f) => f.dp_rank === rank)?.state;
const waitState = (s: SelectionService, id: bigint, state: KvFeedState) =>
  eventually(() => stateOf(s, id) === state, 15_000, `worker ${id} feed ${state} (now ${stateOf(s, id)})`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A rank with no publisher at `endpoint`, an address nobody else can take (not a port found free
 * earlier, which another test's socket, or the subscriber's own outgoing connection, may take).
 */
async function noPublisher(t: After, endpoint: string): Promise<void> {
  const { service, feedLines } = await healthService(t);
  const rec = service.upsertWorker(workerBody(1, { kv_events_endpoint: endpoint }));
  assert.equal(rec.kv_events?.[0].state, 'connecting');
  await eventually(() => feedLines('1').length > 0, 15_000, 'the warning');
  await sleep(WINDOW_SECS * 3 * 1000); // several more windows: no more lines
  const got = feedLines('1');
  assert.equal(got.length, 1, JSON.stringify(got));
  assert.equal(got[0].level, 'warn');
  assert.match(got[0].msg, /not connected/);
  assert.deepEqual([got[0].fields.dpRank, got[0].fields.endpoint, got[0].fields.state], [0, endpoint, 'connecting']);
  assert.equal(stateOf(service, 1n), 'connecting');
  assert.equal(service.ready().ready, true, 'still schedulable');
  assert.deepEqual(service.ready().kv_feeds, { connecting: 1, connected: 0, live: 0, silent: 0, disconnected: 0, error: 0 });
  assert.equal(value((await service.metrics()).text, 'select_service_kv_feed_up', { worker_id: '1', dp_rank: '0' }), 0);
}

test('a rank with no publisher stays connecting, is warned about once, and is still schedulable (nothing at an ipc path)', async (t) => {
  await noPublisher(t, unboundIpcEndpoint(t));
});

test('a rank with no publisher stays connecting, is warned about once, and is still schedulable (a TCP peer that never speaks ZMTP)', async (t) => {
  await noPublisher(t, await silentTcpEndpoint(t));
});

test('a publisher: `connected` before its first batch, `live` after; it stops: `disconnected`, warned once; it returns: `live`, one info line', async (t) => {
  const { service, feedLines, engine } = await connectedWorker(t);
  assert.equal(value((await service.metrics()).text, 'select_service_kv_feed_up', { worker_id: '1', dp_rank: '0' }), 1);
  await engine.publish(0, batch([storedEvent([1n], null, tokenRange(100, 16))]));
  await waitState(service, 1n, 'live');
  await sleep(WINDOW_SECS * 2 * 1000);
  assert.equal(stateOf(service, 1n), 'live', 'idle with nothing expected stays live');

  engine.stop();
  await waitState(service, 1n, 'disconnected');
  assert.equal(value((await service.metrics()).text, 'select_service_kv_feed_up', { worker_id: '1', dp_rank: '0' }), 0);
  await eventually(() => feedLines('1').some((l) => /disconnected/.test(l.msg)), 15_000, 'the disconnected warning');
  await sleep(WINDOW_SECS * 3 * 1000);
  const down = feedLines('1');
  assert.deepEqual(down.map((l) => `${l.level} ${l.fields.state}`), ['warn disconnected'], 'one warning for the whole episode');
  assert.equal(down[0].fields.endpoint, engine.endpoint);

  await engine.resume();
  await waitState(service, 1n, 'live');
  await eventually(() => feedLines('1').length === 2, 15_000, 'the recovery line');
  assert.deepEqual(feedLines('1').map((l) => `${l.level} ${l.msg}`), ['warn KV event feed disconnected', 'info KV event feed recovered']);
  assert.deepEqual(service.ready().kv_feeds, { connecting: 0, connected: 0, live: 1, silent: 0, disconnected: 0, error: 0 });
});

test('bookings with completed prefill and no KV events turn the rank `silent` (warned once); a batch makes it `live` again', async (t) => {
  const { service, feedLines, engine } = await connectedWorker(t);
  // two bookings whose prompts have uncached complete blocks; the "engine" publishes nothing
  for (const id of ['a', 'b']) {
    await service.selectAndReserve({ model_name: 'm', selection_id: id, token_ids: tokenRange(id === 'a' ? 1 : 500, 40) });
    service.prefillComplete(id);
  }
  await waitState(service, 1n, 'silent');
  assert.equal(service.ready().ready, true, 'a silent feed leaves the worker schedulable');
  assert.equal((await service.select({ model_name: 'm', token_ids: tokenRange(1, 40) })).worker_id, 1n);
  await eventually(() => feedLines('1').length > 0, 15_000, 'the silent warning');
  await sleep(WINDOW_SECS * 3 * 1000);
  assert.deepEqual(feedLines('1').map((l) => `${l.level} ${l.fields.state}`), ['warn silent']);
  const text = (await service.metrics()).text;
  assert.equal(value(text, 'select_service_kv_feed_up', { worker_id: '1' }), 0);
  assert.equal(value(text, 'select_service_kv_feed_state', { worker_id: '1', state: 'silent' }), 1);

  await engine.publish(0, batch([storedEvent([1n, 2n], null, tokenRange(1, 32))]));
  await waitState(service, 1n, 'live');
  await eventually(() => feedLines('1').length === 2, 15_000, 'the recovery line');
  assert.equal(feedLines('1')[1].msg, 'KV event feed recovered');
});

test('prefill completions whose blocks did arrive keep the rank `live`', async (t) => {
  const { service, engine } = await connectedWorker(t);
  const P = tokenRange(1, 40);
  await service.selectAndReserve({ model_name: 'm', selection_id: 'a', token_ids: P });
  await engine.publish(0, batch([storedEvent([1n, 2n], null, P.slice(0, 32))])); // the engine stored them
  await until(service, 1, (c) => c.batchesApplied === 1, 'the batch');
  service.prefillComplete('a'); // reported after the blocks arrived: already met
  await sleep(WINDOW_SECS * 3 * 1000);
  assert.equal(stateOf(service, 1n), 'live');
});

test('an endpoint whose host does not resolve is `error` with the reason, logged at once (long before the window)', async (t) => {
  const { service, lines } = await healthService(t, 30); // the default window
  const rec = service.upsertWorker(workerBody(1, { kv_events_endpoint: 'tcp://nosuchhost.invalid:5557' }));
  assert.equal(rec.lifecycle, 'schedulable');
  await waitState(service, 1n, 'error');
  const feed = service.listWorkers()[0].kv_events![0];
  assert.match(feed.reason ?? '', /nosuchhost\.invalid/);
  await eventually(() => lines.some((l) => /KV event feed/.test(l.msg)), 15_000, 'the error line');
  const warned = lines.filter((l) => /KV event feed/.test(l.msg));
  assert.equal(warned.length, 1);
  assert.deepEqual([warned[0].level, warned[0].fields.state, warned[0].fields.endpoint], ['warn', 'error', 'tcp://nosuchhost.invalid:5557']);
  assert.match(String(warned[0].fields.reason), /nosuchhost\.invalid/);
  assert.deepEqual(service.ready().kv_feeds, { connecting: 0, connected: 0, live: 0, silent: 0, disconnected: 0, error: 1 });
});

test('a block-size mismatch is counted (record, metric) and warned about once', async (t) => {
  const { service, feedLines } = await healthService(t);
  const engine = await FakeEngine.start();
  t.after(async () => engine.close());
  service.upsertWorker(workerBody(1, { kv_events_endpoint: engine.endpoint }));
  await engine.waitForSubscribers();
  const P = tokenRange(100, 64);
  await engine.publish(0, batch([storedEvent([1n, 2n], null, P, { block_size: 32 })])); // the worker says 16
  await engine.publish(1, batch([storedEvent([3n], null, P.slice(0, 8))])); // 8 tokens for a 16-token block
  await engine.publish(2, batch([storedEvent([4n, 5n], null, P, { block_size: 32 })]));
  await until(service, 1, (c) => c.batchesApplied === 3, 'three batches');
  const rec = service.listWorkers()[0].kv_events![0];
  assert.equal(rec.block_size_mismatches, 3);
  assert.equal(rec.blocks_stored, 0);
  assert.equal(value((await service.metrics()).text, 'select_service_kv_block_size_mismatches_total', { worker_id: '1' }), 3);
  await eventually(() => feedLines('1').some((l) => /block size/.test(l.msg)), 15_000, 'the mismatch warning');
  await sleep(WINDOW_SECS * 2 * 1000);
  assert.equal(feedLines('1').filter((l) => /block size/.test(l.msg)).length, 1);
  assert.equal(feedLines('1').find((l) => /block size/.test(l.msg))?.level, 'warn');
});

test('the builder refuses a window that is not a positive number, naming the flag', async () => {
  for (const bad of [0, -1, Number.NaN]) {
    await assert.rejects(new SelectionServiceBuilder(parseRouterConfig({})).kvFeedSilence(bad).build(),
      (e: unknown) => e instanceof ConfigError && /--kv-feed-silence-secs: must be a number greater than 0/.test(e.message));
  }
});

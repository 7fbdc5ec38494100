/**
 * The simulator page in headless Chromium (Debian's /usr/bin/chromium driven by playwright-core;
 * never a downloaded browser): opened from the file system, it runs a short simulation of the
 * bundled sample in its Web Worker and renders the table and charts, exports CSV, sweeps a knob and
 * cancels a run; the `select-service/browser`
 * bundle works as an ES module without the page.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { AddressInfo } from 'node:net';
import { serveStatic } from '../../../src/simulate-serve.js';

const CHROMIUM = '/usr/bin/chromium';
const SKIP = existsSync(CHROMIUM) ? false
  : `skipped: Chromium is not installed at ${CHROMIUM} (Debian: apt-get install -y chromium; .ci/run installs it)`;
const BUILD = join(process.cwd(), 'build');

type Browser = Awaited<ReturnType<typeof import('playwright-core')['chromium']['launch']>>;
let browser: Browser | null = null;

before(async () => {
  if (SKIP) return;
  const { chromium } = await import('playwright-core');
  browser = await chromium.launch({ executablePath: CHROMIUM });
});
after(async () => { await browser?.close(); });

/** The page from the file system, ready, with its script errors collected. */
async function openPage() {
  const page = await browser!.newPage({ viewport: { width: 1300, height: 1000 } });
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(pathToFileURL(join(BUILD, 'web/index.html')).href);
  await page.waitForFunction(() => document.body.dataset.state === 'ready');
  return { page, errors };
}

test('the page runs a simulation from file:// and renders the table and charts', { skip: SKIP }, async () => {
  const { page, errors } = await openPage();
  assert.match(await page.textContent('#sample-size') ?? '', /^2000 requests$/);
  assert.equal(await page.isVisible('#load-section'), false, 'no empty per-worker heading before the first run');
  assert.equal(await page.isDisabled('#csv'), true);
  await page.fill('#limit', '400');
  await page.check('input[name=policy][value=session_affinity]');
  await page.click('#run');
  await page.waitForFunction(() => document.body.dataset.state !== 'running' && document.body.dataset.state !== 'ready', null, { timeout: 120_000 });
  assert.equal(await page.evaluate(() => document.body.dataset.state), 'done', await page.textContent('#status') ?? '');
  const rows = await page.$$eval('#metrics tbody tr', (trs) => trs.map((tr) => ({
    policy: (tr as HTMLElement).dataset.policy, hit: Number((tr as HTMLElement).dataset.hitRate),
    ttft: Number((tr as HTMLElement).dataset.ttftP50), cells: Array.from(tr.querySelectorAll('td'), (td) => td.textContent),
  })));
  assert.deepEqual(rows.map((r) => r.policy), ['kv', 'round_robin', 'random', 'least_loaded', 'session_affinity']);
  for (const r of rows) {
    assert.ok(r.hit > 0 && r.hit < 0.5, `${r.policy} hit rate ${r.hit}`);
    assert.ok(r.ttft > 10 && r.ttft < 60_000, `${r.policy} TTFT p50 ${r.ttft} ms`);
    assert.match(r.cells[1] ?? '', /^\d+\.\d%$/);
  }
  const paths = (sel: string) => page.$$eval(`${sel} path.series`, (ps) => ps.map((p) => (p.getAttribute('d') ?? '').length));
  const hit = await paths('#chart-hit');
  const ttft = await paths('#chart-ttft');
  assert.equal(hit.length, 5);
  assert.equal(ttft.length, 5);
  for (const d of [...hit, ...ttft]) assert.ok(d > 100, 'every series drew a line');
  assert.equal(await page.$$eval('#chart-load svg', (s) => s.length), 5);
  assert.equal((await paths('#chart-load')).length, 5 * 8);
  assert.equal(await page.isVisible('#load-section'), true);
  // one y scale for every per-worker chart: the same tick labels everywhere
  const yTicks = await page.$$eval('#chart-load svg', (svgs) => svgs.map((s) => Array.from(s.querySelectorAll('text.tick[text-anchor=end]'), (t) => t.textContent).join(' ')));
  assert.equal(new Set(yTicks).size, 1, yTicks.join(' | '));
  // hover shows values: every series has markers with a title
  const title = await page.textContent('#chart-hit g[data-markers="kv"] circle title');
  assert.match(title ?? '', /^kv: \d+, \d+%$/);
  // CSV export of the table
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#csv')]);
  assert.equal(download.suggestedFilename(), 'simulation.csv');
  const csv = readFileSync(await download.path(), 'utf8').trim().split('\n');
  assert.match(csv[0], /^policy,hit_rate,block_hit_rate,ttft_p50_ms,/);
  assert.deepEqual(csv.slice(1).map((l) => l.split(',')[0]), ['kv', 'round_robin', 'random', 'least_loaded', 'session_affinity']);
  assert.deepEqual(errors, []);
  await page.close();
});

test('a sweep draws TTFT and hit rate against the swept value; Cancel stops a run and the next one works', { skip: SKIP }, async () => {
  const { page, errors } = await openPage();
  // cancel: a long sweep, stopped while it runs
  await page.selectOption('#sweep-knob', 'speed');
  await page.fill('#sweep-values', '1,2,4');
  await page.click('#run');
  await page.waitForFunction(() => /requests$/.test(document.getElementById('status')?.textContent ?? ''), null, { timeout: 60_000 });
  assert.equal(await page.isEnabled('#cancel'), true);
  await page.click('#cancel');
  await page.waitForFunction(() => document.body.dataset.state === 'cancelled');
  assert.equal(await page.isDisabled('#cancel'), true);
  // then a short sweep runs to the end in a fresh worker
  await page.fill('#limit', '300');
  await page.fill('#sweep-values', '1,4');
  await page.click('#run');
  await page.waitForFunction(() => ['done', 'error'].includes(document.body.dataset.state ?? ''), null, { timeout: 120_000 });
  assert.equal(await page.evaluate(() => document.body.dataset.state), 'done', await page.textContent('#status') ?? '');
  const rows = await page.$$eval('#metrics tbody tr', (trs) => trs.map((tr) => `${(tr as HTMLElement).dataset.value} ${(tr as HTMLElement).dataset.policy}`));
  assert.deepEqual(rows, ['1 kv', '1 round_robin', '1 random', '1 least_loaded', '4 kv', '4 round_robin', '4 random', '4 least_loaded']);
  const figures = await page.$$eval('#chart-sweep [data-figure]', (fs) => fs.map((f) => (f as HTMLElement).dataset.figure));
  assert.deepEqual(figures, ['sweep-speed-ttft-p50', 'sweep-speed-ttft-p90', 'sweep-speed-hit-rate']);
  assert.equal(await page.$$eval('#chart-sweep path.series', (ps) => ps.length), 3 * 4);
  assert.equal(await page.isVisible('#load-section'), false);
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#csv')]);
  assert.equal(download.suggestedFilename(), 'sweep-speed.csv');
  const csv = readFileSync(await download.path(), 'utf8').trim().split('\n');
  assert.match(csv[0], /^speed,policy,hit_rate,/);
  assert.equal(csv.length, 9);
  assert.deepEqual(errors, []);
  await page.close();
});

test('a scorer that does not compile is reported on the page', { skip: SKIP }, async () => {
  const page = await browser!.newPage();
  await page.goto(pathToFileURL(join(BUILD, 'web/index.html')).href);
  await page.fill('#limit', '50');
  await page.check('input[name=policy][value=custom]');
  await page.fill('#scorer', 'out[0] = ;');
  await page.click('#run');
  await page.waitForFunction(() => document.body.dataset.state === 'error' || document.body.dataset.state === 'done', null, { timeout: 60_000 });
  assert.match(await page.textContent('#status') ?? '', /^error: .*Unexpected token/);
  await page.close();
});

test('select-service/browser: the core and the simulator as an ES module, without the page', { skip: SKIP }, async (t) => {
  const server = await serveStatic(BUILD, 0);
  t.after(() => server.close());
  const page = await browser!.newPage();
  await page.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/web/index.html`);
  const out = await page.evaluate(async () => {
    const url = '/browser/select-service.js'; // a variable, so tsc does not resolve it
    const m = await import(url) as typeof import('../../../src/browser.js');
    const trace = m.parseTrace('{"timestamp":0,"input_length":1024,"output_length":3,"hash_ids":[0,1]}\n'
      + '{"timestamp":9000,"input_length":1500,"output_length":3,"hash_ids":[0,1,2]}\n');
    const r = await m.simulate(trace, { policies: 'kv', fleet: { workers: 2 } });
    return { core: typeof m.SelectionCore, registry: typeof m.PolicyRegistry, blocks: r.policies[0].blocks, cached: r.policies[0].cached_blocks };
  });
  assert.deepEqual(out, { core: 'function', registry: 'function', blocks: 5, cached: 2 });
  await page.close();
});
